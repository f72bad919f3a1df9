"""Calls that may hold a heterogeneous group (sticky, cooperative-sticky, uniform): every group in a Python task.

Groups whose members subscribe to different topics are balanced globally by
:mod:`groupcoord.assignors.algorithms.global_balance` (every owned partition kept whenever a balanced assignment
keeps them all). It iterates, so it is no DataFrame plan: the call's normalised inputs (members, partitions and the
claims, as given) are repartitioned by group and each group runs :func:`groupcoord.assignors.algorithms.assign`,
the function the coordinator's driver engine runs, in a Python task (``rdd.mapPartitions``; ``applyInArrow`` would do
the same but needs pandas, which groupcoord does not install). The Python group derives subscriptions, assignable
partitions, valid claims and cooperative-sticky's revocations itself, by the same definitions as
:mod:`groupcoord.assignors.prepare`, so none of the plan's derived frames (each a cut, planned twice) is built. The
homogeneous groups of such a call take the same path (the Python sticky target gives the plan's rows,
``tests/assignors/test_engines_agree.py``): planning the per-topic DataFrame target only to drop its heterogeneous
groups cost 4 s of a small call. The result is one lazy frame, so the call is one Spark job whatever the number of
groups or distinct subscriptions (the rounds of pairwise moves this replaces cost two jobs each: 87 jobs for 100
groups of 10 x 100).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import partial
from typing import Any

from pyspark.sql import DataFrame, Row
from pyspark.sql import types as T

from groupcoord.assignors.algorithms import Claim, Group, Member, Partition, assign
from groupcoord.assignors.prepare import Prepared
from groupcoord.assignors.schema import GROUP

_RESULT = T.StructType([T.StructField(GROUP, T.StringType()), T.StructField("member_id", T.StringType()),
                        T.StructField("topic", T.StringType()), T.StructField("partition", T.IntegerType())])
_ROWS = (
    f"{GROUP}", "_kind", "member_id", "group_instance_id", "rack", "topics", "topic", "partition", "racks",
    "generation",
)


def python_assignment(prepared: Prepared, *, name: str, rack_aware: bool) -> DataFrame:
    """``_g, member_id, topic, partition``: the assignment of ``name`` (sticky, cooperative-sticky or uniform) for
    every group of the call, each computed by :func:`groupcoord.assignors.algorithms.assign` in a Python task
    (lazy)."""
    rows = _group_rows(prepared).repartition(GROUP)
    assigned = partial(assign_partition, name=name, rack_aware=rack_aware)
    return prepared.members.sparkSession.createDataFrame(rows.rdd.mapPartitions(assigned), _RESULT)


def _group_rows(prepared: Prepared) -> DataFrame:
    """One frame of every group's members (``_kind`` 0), partitions (1) and claims (2), normalised and checked."""
    none = {"member_id": "CAST(NULL AS string)", "group_instance_id": "CAST(NULL AS string)",
            "rack": "CAST(NULL AS string)", "topics": "CAST(NULL AS array<string>)", "topic": "CAST(NULL AS string)",
            "partition": "CAST(NULL AS int)", "racks": "CAST(NULL AS array<string>)", "generation": "CAST(NULL AS int)"}

    def shaped(frame: DataFrame, kind: int, columns: tuple[str, ...]) -> DataFrame:
        return frame.selectExpr(GROUP, f"{kind} AS _kind", *(c if c in columns else f"{none[c]} AS {c}"
                                                            for c in _ROWS[2:]))

    members = shaped(prepared.ranked, 0, ("member_id", "group_instance_id", "rack", "topics"))
    partitions = shaped(prepared.given, 1, ("topic", "partition", "racks"))
    rows = members.unionByName(partitions)
    if prepared.has_owned and prepared.owned_input is not None:
        # The claims as given (the plan's own claims frame keeps those of the top generation; Group does that).
        claims = prepared.owned_input.where("member_id IS NOT NULL AND topic IS NOT NULL")
        rows = rows.unionByName(shaped(claims, 2, ("member_id", "topic", "partition", "generation")))
    return rows


def assign_partition(rows: Iterable[Row], *, name: str, rack_aware: bool) -> Iterator[tuple[Any, ...]]:
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
            partitions.append(Partition(row["topic"], row["partition"], racks))
        else:
            claims.append(Claim(row["member_id"], row["topic"], row["partition"], row["generation"]))
    for group_id, (members, partitions, claims) in by_group.items():
        placed = assign(Group(tuple(members), tuple(partitions), tuple(claims), group_id), name, rack_aware=rack_aware)
        for (topic, partition), member in sorted(placed.items()):
            yield (group_id, member, topic, partition)
