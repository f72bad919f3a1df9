"""``sticky``: KIP-54's sticky assignor semantics, balance first and then stickiness, as a DataFrame plan; and the
shape it shares with ``cooperative-sticky`` and ``uniform`` (:class:`GloballyBalancedAssignor`).

Valid (a member only gets topics it subscribes to; every partition of a subscribed topic goes to one member), balanced
(counts differ by at most one, or no partition could move to a member with two fewer that subscribes to its topic:
heterogeneous groups are balanced globally, see :mod:`groupcoord.assignors.algorithms.global_balance`) and sticky (as
many owned partitions kept as balance allows). Worked example: C0 owned [t0p0, t0p1, t0p2], C1 owned nothing, C2
joins; t0 has four partitions::

    C0: [t0p0, t0p1]      (kept; quota 2 because it owned the most)
    C1: [t0p2]            (moved: C0 was over quota)
    C2: [t0p3]

Heterogeneous: A subscribes to t1 and t2, B to t1, two partitions each, nothing owned. Topic by topic A would get
three and B one; globally balanced::

    A: [t2p0, t2p1]
    B: [t1p0, t1p1]

The plan is the sticky target, :func:`sticky_target` (the Python algorithm's
:func:`~groupcoord.assignors.algorithms.sticky.balanced_target`, without iteration). Per scope (see
:mod:`groupcoord.assignors.scopes`) with ``P`` partitions and ``n`` members, every member's quota is ``P // n`` and
the ``P % n`` members that own the most get one more: that keeps the most owned partitions possible under the
balance constraint. Each member keeps its owned partitions up to its quota (a ``row_number`` window), then the free
partitions fill the remaining quota (:func:`groupcoord.assignors.fill_plan.fill`). When the plan proves nothing is
owned (``Prepared.has_owned``), the keep branch is left out: every quota is free.

A call that holds a heterogeneous group runs the Python algorithms instead, on the driver or in Python tasks
(:mod:`groupcoord.assignors.python_engine`), as :func:`groupcoord.assignors.engine.choose_engine` decides. A caller
that knows its subscriptions skips the check with the keyword-only option ``subscriptions="homogeneous"`` or
``"heterogeneous"`` (default ``"auto"``); saying ``"homogeneous"`` for a heterogeneous group yields a valid
assignment balanced topic by topic only (a bare option is not a proof: the general plan runs, with its per-topic
scopes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from groupcoord.assignors.base import Assignor
from groupcoord.assignors.engine import DRIVER_PARTITIONS, SUBSCRIPTION_MODES, SubscriptionsMode
from groupcoord.assignors.fill_plan import fill
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


def sticky_target(prepared: Prepared, *, rack_aware: bool, keep_first: Sequence[Column] = ()) -> DataFrame:
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


@dataclass(frozen=True, kw_only=True)
class GloballyBalancedAssignor(Assignor):
    """Balanced first (globally, for heterogeneous subscriptions too), then as sticky as balance allows.

    ``rack_aware`` prefers same-rack members for the partitions that move; ``subscriptions`` is one of
    :data:`~groupcoord.assignors.engine.SUBSCRIPTION_MODES`; ``driver_partitions``: a heterogeneous call small
    enough to collect (at most that many rows of members, partitions and claims) runs on the driver, 0 never (see
    :data:`~groupcoord.assignors.engine.DRIVER_PARTITIONS`).
    """

    rack_aware: bool = True
    subscriptions: SubscriptionsMode = "auto"
    driver_partitions: int = DRIVER_PARTITIONS

    def __post_init__(self) -> None:
        if self.subscriptions not in SUBSCRIPTION_MODES:
            known = ", ".join(SUBSCRIPTION_MODES)
            raise ValueError(f"subscriptions must be one of {known}, got {self.subscriptions!r}")
        if (isinstance(self.driver_partitions, bool) or not isinstance(self.driver_partitions, int)
                or self.driver_partitions < 0):
            raise ValueError(f"driver_partitions must be a non-negative integer, got {self.driver_partitions!r}")

    def _keep_first(self) -> Sequence[Column]:
        """Which owned partitions a member over its quota keeps first (before topic, partition)."""
        return ()

    def _plan(self, prepared: Prepared) -> DataFrame:
        """The sticky balanced target."""
        return sticky_target(prepared, rack_aware=self.rack_aware, keep_first=self._keep_first())


@dataclass(frozen=True, kw_only=True)
class StickyAssignor(GloballyBalancedAssignor):
    """The sticky assignor; ``rack_aware`` prefers same-rack members for the partitions that move."""

    name: ClassVar[str] = "sticky"
