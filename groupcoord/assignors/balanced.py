"""The sticky balanced target shared by ``sticky``, ``cooperative-sticky`` and ``uniform``.

Per scope (see :mod:`groupcoord.assignors.scopes`) with ``P`` partitions and ``n`` members, every member's quota is
``P // n`` and the ``P % n`` members that own the most get one more: that keeps the most owned partitions possible
under the balance constraint. Each member keeps its owned partitions up to its quota (a ``row_number`` window), then
the free partitions fill the remaining quota (:func:`groupcoord.assignors.fill.fill`). No iteration at all.

When the plan proves nothing is owned (``Prepared.has_owned``), the keep branch is left out: every quota is free.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from groupcoord.assignors.fill import fill
from groupcoord.assignors.prepare import PARTITION_ORDER, Prepared
from groupcoord.assignors.scopes import SCOPE, scoped
from groupcoord.plans.lineage import cut
from groupcoord.plans.sql import Subquery

_FRESH_SLOTS_SQL = (
    "SELECT _g, _s, member_id, rank, rack, floor(_p / _n) + CASE WHEN _position < _p % _n THEN 1 ELSE 0 END AS deficit "
    "FROM (SELECT *, row_number() OVER (PARTITION BY _g, _s ORDER BY n_topics, rank) - 1 AS _position, "
    "count(1) OVER (PARTITION BY _g, _s) AS _n FROM {members} "
    "JOIN (SELECT _g, _s, count(1) AS _p FROM {free} GROUP BY _g, _s) USING (_g, _s))"
)
"""Nothing owned: :func:`_quotas` with every owned count 0, as SQL text that the fill nests in its own."""


def _quotas(members: DataFrame, size: DataFrame, owned_count: DataFrame) -> DataFrame:
    """``members`` with ``quota``: ``P // n``, plus one for the ``P % n`` members owning most (then fewest topics,
    then member order)."""
    per_member = [*SCOPE, "member_id"]
    with_counts = members.join(owned_count, per_member, "left").join(size, list(SCOPE))
    scope = Window.partitionBy(*SCOPE)
    position = F.row_number().over(
        scope.orderBy(F.coalesce(F.col("_o"), F.lit(0)).desc(), F.col("n_topics"), F.col("rank"))
    ) - 1
    n = F.count(F.lit(1)).over(scope)
    # One select (not a chain of withColumn calls): each DataFrame call is a round trip and a re-analysis.
    return with_counts.select(
        *per_member, "rank", "rack",
        (F.floor(F.col("_p") / n) + F.when(position < F.col("_p") % n, 1).otherwise(0)).alias("quota"),
    )


def balanced_target(prepared: Prepared, *, rack_aware: bool, keep_first: Sequence[Column] = ()) -> DataFrame:
    """Return ``_g, member_id, topic, partition``: balanced first, then as sticky as balance allows.

    ``keep_first`` orders each member's owned partitions before (topic, partition) when it must drop some.
    """
    frames = scoped(prepared)
    per_member = [*SCOPE, "member_id"]
    rack_aware = rack_aware and prepared.has_racks
    if frames.owned is None:
        quotas = Subquery(_FRESH_SLOTS_SQL, {"members": frames.members, "free": frames.partitions})
        return fill(SCOPE, frames.partitions, quotas, rack_aware=rack_aware).drop("_s")
    size = frames.partitions.groupBy(*SCOPE).agg(F.count(F.lit(1)).alias("_p"))
    owned_count = frames.owned.groupBy(*per_member).agg(F.count(F.lit(1)).alias("_o"))
    members = cut(_quotas(frames.members, size, owned_count))
    keep_order = Window.partitionBy(*per_member).orderBy(*keep_first, *PARTITION_ORDER)
    kept = cut(
        frames.owned.join(members.select(*per_member, "quota"), per_member)
        .withColumn("_k", F.row_number().over(keep_order))
        .where(F.col("_k") <= F.col("quota"))
        .select(*SCOPE, "member_id", "topic", "partition")
    )
    kept_count = kept.groupBy(*per_member).agg(F.count(F.lit(1)).alias("_kept"))
    slots = members.join(kept_count, per_member, "left").select(
        *per_member, "rank", "rack", (F.col("quota") - F.coalesce(F.col("_kept"), F.lit(0))).alias("deficit")
    )
    free = frames.partitions.join(kept, [*SCOPE, *PARTITION_ORDER], "left_anti")
    placed = fill(SCOPE, free, slots, rack_aware=rack_aware)
    return placed.unionByName(kept).drop("_s")
