"""Balancing scopes: the sets of members and partitions that are balanced against each other.

A group whose eligible members all subscribe to every assignable topic (homogeneous subscriptions) is one scope, so
its member counts differ by at most one. A group with heterogeneous subscriptions is split into one scope per topic:
each topic's partitions are balanced over that topic's subscribers. Scope ``_s`` is ``""`` for a homogeneous group and
the topic otherwise; every balanced assignor works on ``(_g, _s)`` in a single plan, whatever the mix of groups.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from groupcoord.assignors.prepare import Prepared
from groupcoord.assignors.schema import GROUP
from groupcoord.plans.lineage import cut, cut_unless_single_task

SCOPE: tuple[str, str] = (GROUP, "_s")


@dataclass(frozen=True)
class Scoped:
    """Scoped frames.

    - ``members``: ``_g, _s, member_id, rank, rack, n_topics``; one row per member and scope it takes part in.
    - ``partitions``: ``_g, _s, topic, partition, racks, weight``.
    - ``owned``: ``_g, _s, member_id, topic, partition, racks, weight, rack`` (valid claims; ``rack`` is the member's),
      or None when the plan proves nothing is owned (``Prepared.has_owned``).
    """

    members: DataFrame
    partitions: DataFrame
    owned: DataFrame | None


def _one_scope(prepared: Prepared) -> tuple[DataFrame, DataFrame]:
    """Members and partitions when every group is proven homogeneous (``Prepared.homogeneous``): one scope each.

    The scope ``""`` is derived from the group column rather than written as a literal, so that the optimiser
    cannot fold it out of the joins' and windows' keys (see :mod:`groupcoord.plans.partitioning`).
    """
    scope = f"coalesce(substring({GROUP}, 1, 0), '') AS _s"
    # Every member subscribes to every topic: the topic count is the same for all and orders nothing.
    # (SQL expressions: one py4j call per frame instead of a few dozen.)
    members = prepared.members.selectExpr(GROUP, scope, "member_id", "rank", "rack", "CAST(0 AS bigint) AS n_topics")
    partitions = prepared.partitions.selectExpr(GROUP, scope, "topic", "partition", "racks", "weight")
    return members, partitions


def scoped(prepared: Prepared) -> Scoped:
    """Split every group into its balancing scopes."""
    if prepared.homogeneous:
        members, partitions = _one_scope(prepared)
        return _with_owned(prepared, members, partitions)
    subs = prepared.subscriptions
    homogeneous = subs.groupBy(GROUP).agg(
        (F.min("n_subs") == F.countDistinct("member_id")).alias("_homogeneous")
    )
    n_topics = subs.groupBy(GROUP, "member_id").agg(F.count(F.lit(1)).alias("n_topics"))
    scope = F.when(F.col("_homogeneous"), F.lit("")).otherwise(F.col("topic")).alias("_s")
    members = (
        subs.join(homogeneous, GROUP)
        .join(n_topics, [GROUP, "member_id"])
        .select(GROUP, scope, "member_id", "rank", "rack", "n_topics")
        .distinct()
    )
    partitions = prepared.partitions.join(homogeneous, GROUP).select(
        GROUP, scope, "topic", "partition", "racks", "weight"
    )
    return _with_owned(prepared, members, partitions)


def _with_owned(prepared: Prepared, members: DataFrame, partitions: DataFrame) -> Scoped:
    """Cut ``members`` and ``partitions`` and add the scoped owned claims (None when none can exist)."""
    if not prepared.has_owned:
        return Scoped(cut_unless_single_task(members), cut_unless_single_task(partitions), None)
    members, partitions = cut(members), cut(partitions)
    owned = (
        prepared.owned.join(partitions, [GROUP, "topic", "partition"])
        .join(members.select(*SCOPE, "member_id", "rack"), [*SCOPE, "member_id"])
        .select(*SCOPE, "member_id", "topic", "partition", "racks", "weight", "rack")
    )
    return Scoped(members, partitions, cut(owned))
