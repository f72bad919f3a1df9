"""The inputs of the comparison with Kafka's Java assignors, written once for both sides, and the measures of an output.

A case is either :class:`Generated` (bench/assign.py's generated groups: members ``member-0..``, topics ``t0..``,
everyone subscribes to everything, nothing owned) or a tuple of explicit :class:`Group` values (any subscriptions,
static members, owned partitions). :func:`case_text` writes it in the line format that ``bench/java/AssignorHarness``
reads, :func:`read_case` reads it back, and :func:`case_frames` builds groupcoord's input DataFrames from the same
value, so that both sides assign the same groups.

An assignment is a pyarrow table ``group_id, member_id, topic, partition`` (:data:`ASSIGNMENT`), read from and
written to the harness's tab-separated output. :func:`spreads`, :func:`moves` and :func:`same_rows` measure one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from pyarrow import csv

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

ASSIGNMENT = pa.schema([("group_id", pa.string()), ("member_id", pa.string()), ("topic", pa.string()),
                        ("partition", pa.int32())])
"""The columns of an assignment table, in the harness's output order."""


@dataclass(frozen=True)
class Member:
    """A group member; ``topics`` None means every topic of its group."""

    member_id: str
    instance_id: str | None = None
    topics: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Group:
    """One group's explicit input: topics with their partition counts, members, and owned partitions."""

    group_id: str
    topics: dict[str, int]
    members: tuple[Member, ...]
    owned: tuple[tuple[str, str, int, int], ...] = field(default=())
    """``(member_id, topic, partition, generation)`` claims."""


@dataclass(frozen=True)
class Generated:
    """``groups`` identical groups ``g0..`` of ``members`` members on ``partitions`` partitions over ``topics``
    topics: bench/assign.py's generated inputs (one group is assigned unbatched, several in one batched call)."""

    groups: int
    members: int
    partitions: int
    topics: int


Case = Generated | tuple[Group, ...]


def case_text(case: Case) -> str:
    """The case in the harness's line format (see ``bench/java/AssignorHarness.java``)."""
    if isinstance(case, Generated):
        return f"generate {case.groups} {case.members} {case.partitions} {case.topics}\n"
    lines: list[str] = []
    for group in case:
        lines.append(f"group {group.group_id}")
        lines += [f"topic {topic} {count}" for topic, count in group.topics.items()]
        lines += [f"member {m.member_id} {m.instance_id or '-'} {'*' if m.topics is None else ','.join(m.topics)}"
                  for m in group.members]
        lines += [f"owned {member} {topic} {partition} {generation}"
                  for member, topic, partition, generation in group.owned]
    return "\n".join(lines) + "\n"


def read_case(text: str) -> Case:
    """The case :func:`case_text` wrote."""
    groups: list[Group] = []
    for line in text.splitlines():
        kind, *f = line.split(" ")
        if kind == "generate":
            return Generated(*(int(v) for v in f))
        if kind == "group":
            groups.append(Group(f[0], {}, ()))
        elif kind == "topic":
            groups[-1].topics[f[0]] = int(f[1])
        elif kind == "member":
            topics = None if f[2] == "*" else tuple(t for t in f[2].split(",") if t)
            member = Member(f[0], None if f[1] == "-" else f[1], topics)
            groups[-1] = replace(groups[-1], members=(*groups[-1].members, member))
        elif kind == "owned":
            claim = (f[0], f[1], int(f[2]), int(f[3]))
            groups[-1] = replace(groups[-1], owned=(*groups[-1].owned, claim))
    return tuple(groups)


def member_counts(case: Case) -> dict[str, int]:
    """Members per group id."""
    if isinstance(case, Generated):
        return {f"g{g}": case.members for g in range(case.groups)}
    return {group.group_id: len(group.members) for group in case}


def assignable(case: Case) -> int:
    """How many partitions an assignment of ``case`` covers: those of the topics that some member subscribes to."""
    if isinstance(case, Generated):
        return case.groups * case.partitions // case.topics * case.topics
    total = 0
    for group in case:
        wanted = {t for m in group.members for t in (group.topics if m.topics is None else m.topics)}
        total += sum(count for topic, count in group.topics.items() if topic in wanted)
    return total


def case_frames(spark: SparkSession, case: Case) -> tuple[DataFrame, DataFrame, DataFrame | None]:
    """groupcoord's ``members``, ``partitions`` and ``owned`` frames (``owned`` None when nothing is owned);
    ``group_id`` only when the case has several groups (a batched call)."""
    if isinstance(case, Generated):
        from bench.assign import _inputs

        members, partitions = _inputs(spark, groups=case.groups, members=case.members, partitions=case.partitions,
                                      topics=case.topics, batched=case.groups > 1)
        return members, partitions, None
    batched = len(case) > 1
    prefix = "group_id string, " if batched else ""

    def keyed(group: Group, row: tuple[object, ...]) -> tuple[object, ...]:
        return (group.group_id, *row) if batched else row

    member_rows = [keyed(g, (m.member_id, m.instance_id, list(g.topics) if m.topics is None else list(m.topics)))
                   for g in case for m in g.members]
    partition_rows = [keyed(g, (topic, p)) for g in case for topic, count in g.topics.items() for p in range(count)]
    owned_rows = [keyed(g, claim) for g in case for claim in g.owned]
    members = spark.createDataFrame(member_rows, prefix + "member_id string, group_instance_id string, "
                                    "topics array<string>")
    partitions = spark.createDataFrame(partition_rows, prefix + "topic string, partition int")
    owned = spark.createDataFrame(owned_rows, prefix + "member_id string, topic string, partition int, "
                                  "generation int") if owned_rows else None
    return members, partitions, owned


def with_owned(case: tuple[Group, ...], assignment: pa.Table) -> tuple[Group, ...]:
    """The case's groups owning ``assignment`` at the next generation: the next round of a cooperative rebalance."""
    claims: dict[str, list[tuple[str, str, int]]] = {}
    for row in assignment.to_pylist():
        claims.setdefault(row["group_id"], []).append((row["member_id"], row["topic"], row["partition"]))
    groups = []
    for group in case:
        generation = max((claim[3] for claim in group.owned), default=0) + 1
        owned = tuple((*claim, generation) for claim in claims.get(group.group_id, []))
        groups.append(replace(group, owned=owned))
    return tuple(groups)


def owned_table(case: tuple[Group, ...]) -> pa.Table:
    """The owned partitions of an explicit case as an assignment table (the previous assignment)."""
    rows = [(g.group_id, member, topic, partition) for g in case for member, topic, partition, _ in g.owned]
    return pa.Table.from_pylist([dict(zip(ASSIGNMENT.names, r, strict=True)) for r in rows], schema=ASSIGNMENT)


def read_assignment(path: Path) -> pa.Table:
    """An assignment written by the harness or by :func:`write_assignment`."""
    options = csv.ReadOptions(column_names=ASSIGNMENT.names)
    parse = csv.ParseOptions(delimiter="\t", quote_char=False)
    types = csv.ConvertOptions(column_types=ASSIGNMENT, strings_can_be_null=False, quoted_strings_can_be_null=False)
    return csv.read_csv(path, read_options=options, parse_options=parse, convert_options=types)


def write_assignment(path: Path, table: pa.Table) -> None:
    """Write ``table`` in the harness's output format."""
    options = csv.WriteOptions(include_header=False, delimiter="\t", quoting_style="none")
    csv.write_csv(table.select(ASSIGNMENT.names).cast(ASSIGNMENT), path, write_options=options)


def same_rows(ours: pa.Table, theirs: pa.Table) -> bool:
    """Whether two assignments hold exactly the same rows."""
    keys = [(name, "ascending") for name in ASSIGNMENT.names]
    return bool(ours.cast(ASSIGNMENT).sort_by(keys).equals(theirs.cast(ASSIGNMENT).sort_by(keys)))


def spreads(case: Case, assignment: pa.Table) -> dict[str, int]:
    """Per group: the most partitions a member holds minus the fewest (a member with nothing holds 0)."""
    per_member = assignment.group_by(["group_id", "member_id"]).aggregate([([], "count_all")])
    per_group = {row["group_id"]: row for row in per_member.group_by("group_id").aggregate(
        [("count_all", "max"), ("count_all", "min"), ([], "count_all")]).to_pylist()}
    result = {}
    for group, size in member_counts(case).items():
        row = per_group.get(group)
        if row is None:
            result[group] = 0
            continue
        fewest = row["count_all_min"] if row["count_all"] == size else 0
        result[group] = row["count_all_max"] - fewest
    return result


def moves(previous: pa.Table, assignment: pa.Table) -> dict[str, int]:
    """Per group of ``previous``: how many of its partitions are not with the same member in ``assignment``."""
    keys = ["group_id", "topic", "partition"]
    joined = previous.cast(ASSIGNMENT).join(assignment.cast(ASSIGNMENT), keys=keys, join_type="left outer",
                                            right_suffix="_now")
    kept = pc.fill_null(pc.equal(joined["member_id"], joined["member_id_now"]), False)
    flagged = joined.append_column("_moved", pc.cast(pc.invert(kept), pa.int64()))
    return {row["group_id"]: row["_moved_sum"]
            for row in flagged.group_by("group_id").aggregate([("_moved", "sum")]).to_pylist()}


def rebalance(group_id: str, *, members: int, partitions: int, topics: int, leaving_every: int, joining: int,
              heterogeneous: bool) -> Group:
    """One group after a rebalance trigger: ``members`` members owned a round-robin deal of each topic's partitions
    among its subscribers (generation 1); every ``leaving_every``-th of them left (its partitions are not owned any
    more) and ``joining`` new members joined. Heterogeneous: member ``i`` skips topic ``j`` when
    ``(i + j) % 3 == 0``."""
    names = [f"t{t}" for t in range(topics)]
    per_topic = partitions // topics

    def subscription(index: int) -> tuple[str, ...] | None:
        if not heterogeneous:
            return None
        return tuple(n for j, n in enumerate(names) if (index + j) % 3)

    before = [Member(f"member-{i}", None, subscription(i)) for i in range(members)]
    owned: list[tuple[str, str, int, int]] = []
    for j, name in enumerate(names):
        holders = [m for m in before if m.topics is None or name in m.topics]
        owned += [(holders[(p + j) % len(holders)].member_id, name, p, 1) for p in range(per_topic)]
    leaving = {f"member-{i}" for i in range(0, members, leaving_every)}
    stay = tuple(m for m in before if m.member_id not in leaving)
    new = tuple(Member(f"member-new-{k}", None, subscription(members + k)) for k in range(joining))
    kept = tuple(claim for claim in owned if claim[0] not in leaving)
    return Group(group_id, dict.fromkeys(names, per_topic), stay + new, kept)


def explicit(group_id: str, topics: dict[str, int], subscriptions: Sequence[tuple[str, str | None, Sequence[str]]]
             ) -> Group:
    """A group from ``(member_id, instance_id, topics)`` triples, nothing owned (for small hand-written cases)."""
    return Group(group_id, topics, tuple(Member(m, i, tuple(t)) for m, i, t in subscriptions))
