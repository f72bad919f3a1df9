"""Global balance for heterogeneous subscriptions on Spark: each heterogeneous group in one Python task.

The algorithm is :mod:`groupcoord.assignors.algorithms.global_balance` (balanced globally, and every owned partition
kept whenever a balanced assignment keeps them all). It iterates, so it is not a DataFrame plan: the heterogeneous
groups' members, assignable partitions and valid owned claims are grouped by group (``groupBy(_g).applyInArrow``) and
each group runs the same Python function the driver runs for small groups. The rest of the call stays the DataFrame
plan; the union is one lazy frame, so a call with heterogeneous groups is still one Spark job, whatever the number
of groups or distinct subscriptions (before, each round of pairwise moves cost two jobs: 87 jobs for 100 groups of
10 x 100).
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from groupcoord.assignors.algorithms import Claim, Group, Member, Partition
from groupcoord.assignors.algorithms.global_balance import globally_balanced
from groupcoord.assignors.prepare import Prepared
from groupcoord.assignors.schema import GROUP

_RESULT = f"{GROUP} string, member_id string, topic string, partition int"
_ROWS = (
    f"{GROUP}", "_kind", "member_id", "group_instance_id", "rack", "topics", "topic", "partition", "racks",
)


def heterogeneous_groups(prepared: Prepared) -> DataFrame:
    """``_g`` of every group whose members' existing subscriptions differ."""
    return (
        prepared.subscriptions.groupBy(GROUP)
        .agg((F.min("n_subs") < F.countDistinct("member_id")).alias("_heterogeneous"))
        .where(F.col("_heterogeneous"))
        .select(GROUP)
    )


def rebalance(prepared: Prepared, target: DataFrame, *, rack_aware: bool, rack_first: bool) -> DataFrame:
    """Return ``target`` (``_g, member_id, topic, partition``) with its heterogeneous groups replaced by their
    global balance (lazy; ``rack_first`` is ``uniform``'s release order)."""
    groups = heterogeneous_groups(prepared)
    rows = _group_rows(prepared).join(groups, GROUP, "left_semi")
    balanced = rows.groupBy(GROUP).applyInArrow(_balancer(rack_aware=rack_aware, racks_first=rack_first), _RESULT)
    return target.select(GROUP, "member_id", "topic", "partition").join(groups, GROUP, "left_anti").unionByName(
        balanced
    )


def _group_rows(prepared: Prepared) -> DataFrame:
    """One frame of every group's members (``_kind`` 0), assignable partitions (1) and valid owned claims (2)."""
    none = {"member_id": "CAST(NULL AS string)", "group_instance_id": "CAST(NULL AS string)",
            "rack": "CAST(NULL AS string)", "topics": "CAST(NULL AS array<string>)", "topic": "CAST(NULL AS string)",
            "partition": "CAST(NULL AS int)", "racks": "CAST(NULL AS array<string>)"}

    def shaped(frame: DataFrame, kind: int, columns: tuple[str, ...]) -> DataFrame:
        return frame.selectExpr(GROUP, f"{kind} AS _kind", *(c if c in columns else f"{none[c]} AS {c}"
                                                            for c in _ROWS[2:]))

    members = shaped(prepared.ranked, 0, ("member_id", "group_instance_id", "rack", "topics"))
    partitions = shaped(prepared.partitions, 1, ("topic", "partition", "racks"))
    rows = members.unionByName(partitions)
    if prepared.has_owned:
        rows = rows.unionByName(shaped(prepared.owned, 2, ("member_id", "topic", "partition")))
    return rows


def _balancer(*, rack_aware: bool, racks_first: bool) -> Callable[[pa.Table], pa.Table]:
    """:func:`balance_group_table` with its options bound, as a plain function: ``applyInArrow`` reads the UDF's
    type hints, which a ``functools.partial`` does not have."""

    def balance(table: pa.Table) -> pa.Table:
        return balance_group_table(table, rack_aware=rack_aware, racks_first=racks_first)

    return balance


def balance_group_table(table: pa.Table, *, rack_aware: bool, racks_first: bool) -> pa.Table:
    """One group's rows (see :func:`_group_rows`) in, its globally balanced assignment out (``_RESULT``)."""
    members: list[Member] = []
    partitions: list[Partition] = []
    claims: list[Claim] = []
    group_id = ""
    for row in table.to_pylist():
        group_id = row[GROUP]
        if row["_kind"] == 0:
            topics = tuple(t for t in row["topics"] or () if t is not None)
            members.append(Member(row["member_id"], topics, row["group_instance_id"], row["rack"]))
        elif row["_kind"] == 1:
            racks = tuple(r for r in row["racks"] or () if r is not None)
            partitions.append(Partition(row["topic"], row["partition"], racks))
        else:
            claims.append(Claim(row["member_id"], row["topic"], row["partition"], 0))
    group = Group(tuple(members), tuple(partitions), tuple(claims), group_id)
    placed = sorted(globally_balanced(group, rack_aware=rack_aware, racks_first=racks_first).items())
    return pa.table({
        GROUP: pa.array([group_id] * len(placed), pa.string()),
        "member_id": pa.array([member for _, member in placed], pa.string()),
        "topic": pa.array([key[0] for key, _ in placed], pa.string()),
        "partition": pa.array([key[1] for key, _ in placed], pa.int32()),
    })
