"""``weighted``: balances the sum of partition weights (lag, bytes per second), not partition counts.

Per scope (see :mod:`groupcoord.assignors.scopes`) with total weight ``W`` over ``n`` members, ``mean = W / n``:

1. *Keep*: each member keeps its owned partitions, in (topic, partition) order, while its kept weight stays within
   ``min(mean * (1 + tolerance), mean + max weight)``; small weight changes therefore move nothing.
2. *Level*: the free weight ``R`` fills members up to a common water level ``T`` (``sum(max(0, T - kept)) = R``,
   found with one sorted window); ``T <= mean``.
3. *Place*: members' free capacities ``T - kept`` are laid end to end and each free partition goes to the member
   whose interval holds the partition's starting offset (running weight sum), so a member gets at most its capacity
   plus one partition: every load stays within ``mean + max weight``.

Worked example: weights t0p0=6, t0p1=1, t0p2=1, t0p3=4, members C0, C1, nothing owned (mean 6)::

    C0: [t0p0]                 (6)
    C1: [t0p1, t0p2, t0p3]     (6)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from groupcoord.assignors.base import Assignor
from groupcoord.assignors.prepare import PARTITION_ORDER, Prepared
from groupcoord.assignors.scopes import SCOPE, scoped

_RUNNING = (Window.unboundedPreceding, Window.currentRow)


@dataclass(frozen=True, kw_only=True)
class WeightedAssignor(Assignor):
    """The weighted assignor; ``tolerance`` is the fraction above the mean load a member may keep owned weight."""

    name: ClassVar[str] = "weighted"
    homogeneous_plan: ClassVar[bool] = True
    tolerance: float = 0.1

    def __post_init__(self) -> None:
        if not self.tolerance >= 0:
            raise ValueError(f"tolerance must be >= 0, got {self.tolerance}")

    def _assign(self, prepared: Prepared) -> DataFrame:
        frames = scoped(prepared)
        per_member = [*SCOPE, "member_id"]
        totals = frames.partitions.groupBy(*SCOPE).agg(F.sum("weight").alias("_w"), F.max("weight").alias("_wmax"))
        counts = frames.members.groupBy(*SCOPE).agg(F.count(F.lit(1)).alias("_n"))
        limits = totals.join(counts, list(SCOPE)).select(
            *SCOPE,
            "_w",
            F.least(
                F.col("_w") / F.col("_n") * (1 + self.tolerance), F.col("_w") / F.col("_n") + F.col("_wmax")
            ).alias("_limit"),
        )
        if frames.owned is None:
            # Nothing owned: nothing kept, and the water level is the mean.
            kept: DataFrame | None = None
            members = frames.members.select(*per_member, "rank", F.lit(0.0).alias("_kept"))
            levels = limits.join(counts, list(SCOPE)).select(*SCOPE, (F.col("_w") / F.col("_n")).alias("_level"))
            free = frames.partitions
        else:
            kept = self._kept(frames.owned, limits)
            members, levels = self._levels(frames.members, kept, limits)
            free = frames.partitions.join(kept, [*SCOPE, *PARTITION_ORDER], "left_anti")
        capacity = F.greatest(F.col("_level") - F.col("_kept"), F.lit(0.0))
        starts = (
            members.join(levels, list(SCOPE))
            .withColumn("_cap", capacity)
            .withColumn(
                "_at",
                F.sum("_cap").over(Window.partitionBy(*SCOPE).orderBy("rank").rowsBetween(*_RUNNING)) - F.col("_cap"),
            )
            .select(
                *SCOPE,
                "_at",
                F.lit(0).alias("_kind"),
                (F.col("_cap") > 0).alias("_open"),
                "rank",
                "member_id",
                F.lit(None).cast("string").alias("topic"),
                F.lit(None).cast("int").alias("partition"),
            )
        )
        offsets = free.withColumn(
            "_at",
            F.sum("weight").over(Window.partitionBy(*SCOPE).orderBy(*PARTITION_ORDER).rowsBetween(*_RUNNING))
            - F.col("weight"),
        ).select(
            *SCOPE,
            "_at",
            F.lit(1).alias("_kind"),
            F.lit(True).alias("_open"),
            F.lit(0).alias("rank"),
            F.lit(None).cast("string").alias("member_id"),
            "topic",
            "partition",
        )
        # Members sort before partitions at the same offset, and open (positive-capacity) members last among members.
        timeline = Window.partitionBy(*SCOPE).orderBy("_at", "_kind", "_open", "rank", *PARTITION_ORDER)
        placed = (
            starts.unionByName(offsets)
            .withColumn("_owner", F.last("member_id", ignorenulls=True).over(timeline.rowsBetween(*_RUNNING)))
            .where(F.col("_kind") == 1)
            .select(*SCOPE, F.col("_owner").alias("member_id"), "topic", "partition")
        )
        return (placed if kept is None else placed.unionByName(kept.drop("weight"))).drop("_s")

    @staticmethod
    def _kept(owned: DataFrame, limits: DataFrame) -> DataFrame:
        """Each member's owned partitions, in (topic, partition) order, while the kept weight stays within the limit."""
        running_kept = Window.partitionBy(*SCOPE, "member_id").orderBy(*PARTITION_ORDER).rowsBetween(*_RUNNING)
        return (
            owned.join(limits, list(SCOPE))
            .withColumn("_cum", F.sum("weight").over(running_kept))
            .where(F.col("_cum") <= F.col("_limit"))
            .select(*SCOPE, "member_id", "topic", "partition", "weight")
        )

    @staticmethod
    def _levels(members: DataFrame, kept: DataFrame, limits: DataFrame) -> tuple[DataFrame, DataFrame]:
        """Members with their kept load ``_kept``, and each scope's water level ``_level``."""
        per_member = [*SCOPE, "member_id"]
        kept_load = kept.groupBy(*per_member).agg(F.sum("weight").alias("_kept"))
        members = (
            members.join(kept_load, per_member, "left")
            .withColumn("_kept", F.coalesce(F.col("_kept"), F.lit(0.0)))
            .join(limits.select(*SCOPE, "_w"), list(SCOPE))
        )
        # Water level: with kept loads sorted ascending k_1..k_n and prefix sums s_j, the level is (R + s_j) / j for
        # the largest j whose k_j lies below it.
        by_load = Window.partitionBy(*SCOPE).orderBy("_kept", "rank")
        levels = (
            members.withColumn("_j", F.row_number().over(by_load))
            .withColumn("_prefix", F.sum("_kept").over(by_load.rowsBetween(*_RUNNING)))
            .withColumn("_r", F.col("_w") - F.sum("_kept").over(Window.partitionBy(*SCOPE)))
            .withColumn("_t", (F.col("_r") + F.col("_prefix")) / F.col("_j"))
            .where(F.col("_kept") <= F.col("_t"))
            .groupBy(*SCOPE)
            .agg(F.max_by("_t", "_j").alias("_level"))
        )
        return members, levels
