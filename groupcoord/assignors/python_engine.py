"""The Python algorithms on a call given as DataFrames that holds a heterogeneous group (sticky, cooperative-sticky,
uniform): every group of the call in Python.

Groups whose members subscribe to different topics are balanced globally by
:mod:`groupcoord.assignors.algorithms.global_balance` (every owned partition kept whenever a balanced assignment
keeps them all). It iterates, so it is no DataFrame plan: each group runs
:func:`groupcoord.assignors.algorithms.assign`, the function the coordinator's driver engine runs, on the call's
inputs as given (members, partitions and claims in canonical columns). :class:`~groupcoord.assignors.algorithms.Group`
checks the values with the plans' messages and derives subscriptions, valid claims and cooperative-sticky's
revocations itself, so none of the plan's derived frames is built. The homogeneous groups of such a call take the
same path (the Python sticky target gives the plan's rows, ``tests/assignors/test_engines_agree.py``).

Where the Python runs (:func:`groupcoord.assignors.engine.choose_engine` decides):

- **on the driver** (:func:`driver_assignment`), for a call small enough to collect: one job collects its rows
  (:func:`collect_call`: a projection of each input, no exchange, bounded by a limit), and the result is a
  driver-local frame. A cold call costs that one small job, not a Python worker's start and a shuffle;
- **in Python tasks** (:func:`python_assignment`) for larger calls: the rows repartitioned by group and handed to
  ``rdd.mapPartitions`` (``applyInArrow`` would do the same but needs pandas, which groupcoord does not install), in
  the call's one lazy job.

Either way a call is one job whatever the number of groups or distinct subscriptions.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import partial
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, Row
from pyspark.sql import types as T

from groupcoord.assignors.algorithms import Claim, Group, Member, Partition, assign
from groupcoord.assignors.collect import to_arrow
from groupcoord.assignors.prepare import Prepared
from groupcoord.assignors.schema import GROUP
from groupcoord.plans.sql import query

_RESULT = T.StructType([T.StructField(GROUP, T.StringType()), T.StructField("member_id", T.StringType()),
                        T.StructField("topic", T.StringType()), T.StructField("partition", T.IntegerType())])
_ARROW_RESULT = pa.schema([(GROUP, pa.string()), ("member_id", pa.string()), ("topic", pa.string()),
                           ("partition", pa.int32())])
_ROWS = (
    f"{GROUP}", "_kind", "member_id", "group_instance_id", "rack", "topics", "topic", "partition", "racks", "weight",
    "generation",
)


def collect_call(prepared: Prepared, limit: int) -> pa.Table | None:
    """Every group's rows (see :func:`_group_rows`) on the driver, with one job, or None when there are more than
    ``limit``."""
    collected = to_arrow(_group_rows(prepared).limit(limit + 1))
    return collected if collected.num_rows <= limit else None


def declares_different_topics(rows: pa.Table) -> bool:
    """Whether some group of collected rows has members declaring different topic sets."""
    seen: dict[str, frozenset[str]] = {}
    for row in rows.select([GROUP, "_kind", "topics"]).to_pylist():
        if row["_kind"] == 0:
            topics = frozenset(t for t in row["topics"] or () if t is not None)
            if seen.setdefault(row[GROUP], topics) != topics:
                return True
    return False


def driver_assignment(prepared: Prepared, rows: pa.Table, *, name: str, rack_aware: bool) -> DataFrame:
    """``_g, member_id, topic, partition`` of collected rows, computed here by
    :func:`groupcoord.assignors.algorithms.assign`: a driver-local frame."""
    placed = list(zip(*assign_partition(rows.to_pylist(), name=name, rack_aware=rack_aware), strict=True))
    columns = placed or [()] * len(_ARROW_RESULT)
    return prepared.session.createDataFrame(pa.Table.from_arrays(
        [pa.array(values, type=field.type) for values, field in zip(columns, _ARROW_RESULT, strict=True)],
        schema=_ARROW_RESULT))


def python_assignment(prepared: Prepared, *, name: str, rack_aware: bool) -> DataFrame:
    """``_g, member_id, topic, partition``: the assignment of ``name`` (sticky, cooperative-sticky or uniform) for
    every group of the call, each computed by :func:`groupcoord.assignors.algorithms.assign` in a Python task
    (lazy)."""
    assigned = partial(assign_partition, name=name, rack_aware=rack_aware)
    rows = _group_rows(prepared).repartition(GROUP)
    return prepared.session.createDataFrame(rows.rdd.mapPartitions(assigned), _RESULT)


def _group_rows(prepared: Prepared) -> DataFrame:
    """One frame of every group's members (``_kind`` 0), partitions (1) and claims (2) in canonical columns.

    The values are unchecked here: :class:`~groupcoord.assignors.algorithms.Group` checks them, with the plans'
    messages. So the frame is a projection of each input (no window, no exchange), and the algorithm ranks the
    members itself.
    """
    none = {"member_id": "CAST(NULL AS string)", "group_instance_id": "CAST(NULL AS string)",
            "rack": "CAST(NULL AS string)", "topics": "CAST(NULL AS array<string>)", "topic": "CAST(NULL AS string)",
            "partition": "CAST(NULL AS int)", "racks": "CAST(NULL AS array<string>)", "weight": "CAST(NULL AS double)",
            "generation": "CAST(NULL AS int)"}

    def shaped(what: str, kind: int, columns: tuple[str, ...], where: str = "true") -> DataFrame:
        text, frame = prepared.unchecked[what]
        selected = ", ".join(c if c in columns else f"{none[c]} AS {c}" for c in _ROWS[2:])
        return query(f"SELECT {GROUP}, {kind} AS _kind, {selected} FROM ({text}) WHERE {where}", frame=frame)

    rows = shaped("members", 0, ("member_id", "group_instance_id", "rack", "topics")).unionByName(
        shaped("partitions", 1, ("topic", "partition", "racks", "weight")))
    if prepared.has_owned and "owned" in prepared.unchecked:
        # The claims as given (Group resolves them per partition), and every claim the check refuses.
        claimed = "(member_id IS NOT NULL AND topic IS NOT NULL) OR partition < 0"
        rows = rows.unionByName(shaped("owned", 2, ("member_id", "topic", "partition", "generation"), claimed))
    return rows


def assign_partition(rows: Iterable[Row | dict[str, Any]], *, name: str, rack_aware: bool) -> Iterator[tuple[Any, ...]]:
    """The rows of whole groups (see :func:`_group_rows`) in, each group's assignment out (``_g, member_id, topic,
    partition``)."""
    by_group: dict[str, tuple[list[Member], list[Partition], list[Claim]]] = {}
    for row in rows:
        members, partitions, claims = by_group.setdefault(row[GROUP], ([], [], []))
        if row["_kind"] == 0:
            topics = tuple(t for t in row["topics"] or () if t is not None)
            members.append(Member(row["member_id"], topics, row["group_instance_id"], row["rack"]))
        elif row["_kind"] == 1:
            racks = tuple(r for r in row["racks"] or () if r is not None)
            partitions.append(Partition(row["topic"], row["partition"], racks, row["weight"]))
        else:
            claims.append(Claim(row["member_id"], row["topic"], row["partition"], row["generation"]))
    for group_id, (members, partitions, claims) in by_group.items():
        placed = assign(Group(tuple(members), tuple(partitions), tuple(claims), group_id), name, rack_aware=rack_aware)
        for (topic, partition), member in sorted(placed.items()):
            yield (group_id, member, topic, partition)
