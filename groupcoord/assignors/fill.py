"""The shared "fill" step: hand free partitions to members' free slots, same rack first, in a fixed total order.

Each member of a scope (a group, or a group and topic) has ``deficit`` free slots. Slots are laid end to end in member
order and free partitions are numbered in (topic, partition) order; the u-th free partition goes to the u-th slot.
That is one ``row_number``, one running sum, and one running ``last`` over the union of members' starts and the
numbered partitions: no loop, no exploded slot rows, no join. With rack awareness, partitions that have a
replica in a member's rack are matched to that rack's slots first, the same way within each rack.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from groupcoord.assignors.lineage import cut
from groupcoord.assignors.prepare import PARTITION_ORDER

_TYPES: dict[str, str] = {"topic": "string", "partition": "int"}


def _unique(*names: str) -> list[str]:
    return list(dict.fromkeys(names))


def _match_racks(scope: Sequence[str], free: DataFrame, slots: DataFrame) -> DataFrame:
    """Same-rack matches ``scope, member_id, topic, partition``: each partition and each slot used at most once."""
    by_rack = [*scope, "rack"]
    rack_slots = (
        slots.where(F.col("rack").isNotNull() & (F.col("deficit") > 0))
        .select(*scope, "member_id", "rank", "rack", F.explode(F.sequence(F.lit(1), F.col("deficit"))).alias("_j"))
        .withColumn("_slot", F.row_number().over(Window.partitionBy(*by_rack).orderBy("rank", "_j")))
        .select(*by_rack, "member_id", "_slot")
    )
    rack_parts = (
        free.select(*_unique(*scope, *PARTITION_ORDER), F.explode(F.array_distinct("racks")).alias("rack"))
        .join(rack_slots.select(*by_rack).distinct(), by_rack, "left_semi")
        .withColumn("_slot", F.row_number().over(Window.partitionBy(*by_rack).orderBy(*PARTITION_ORDER)))
    )
    one_rack = Window.partitionBy(*_unique(*scope, *PARTITION_ORDER)).orderBy("rack")
    return (
        rack_parts.join(rack_slots, [*by_rack, "_slot"])
        .withColumn("_pick", F.row_number().over(one_rack))
        .where(F.col("_pick") == 1)
        .select(*_unique(*scope, "member_id", *PARTITION_ORDER))
    )


def fill(scope: Sequence[str], free: DataFrame, slots: DataFrame, *, rack_aware: bool) -> DataFrame:
    """Assign ``free`` partitions (``scope, topic, partition, racks``) to ``slots`` (``scope, member_id, rank, rack,
    deficit``). The deficits of a scope must add up to its number of free partitions.

    Returns ``scope, member_id, topic, partition``.
    """
    out_columns = _unique(*scope, "member_id", *PARTITION_ORDER)
    matched: DataFrame | None = None
    if rack_aware:
        matched = cut(_match_racks(scope, free, slots))
        free = free.join(matched, _unique(*scope, *PARTITION_ORDER), "left_anti")
        used = matched.groupBy(*scope, "member_id").agg(F.count(F.lit(1)).alias("_used"))
        slots = slots.join(used, [*scope, "member_id"], "left").withColumn(
            "deficit", F.col("deficit") - F.coalesce(F.col("_used"), F.lit(0))
        )
    # Slots laid end to end: a member with free slots starts at the running sum of the deficits before it. Members'
    # starts and the free partitions' numbers go on one timeline per scope; each partition takes the last member
    # that started at or before it (one window sort, no exploded slot rows, no join).
    running = Window.unboundedPreceding, Window.currentRow
    ordered = Window.partitionBy(*scope).orderBy("rank").rowsBetween(*running)
    nothing = F.lit(None)
    starts = (
        slots.select(*scope, "member_id", "deficit", (F.sum("deficit").over(ordered) - F.col("deficit")).alias("_at"))
        .where(F.col("deficit") > 0)
        .select(
            *scope, "_at", F.lit(0).alias("_kind"), "member_id",
            *[nothing.cast(_TYPES[c]).alias(c) for c in PARTITION_ORDER if c not in scope],
        )
    )
    numbered = free.select(
        *scope,
        (F.row_number().over(Window.partitionBy(*scope).orderBy(*PARTITION_ORDER)) - 1).cast("long").alias("_at"),
        F.lit(1).alias("_kind"),
        nothing.cast("string").alias("member_id"),
        *[c for c in PARTITION_ORDER if c not in scope],
    )
    timeline = Window.partitionBy(*scope).orderBy("_at", "_kind").rowsBetween(*running)
    placed = (
        starts.unionByName(numbered)
        .select("*", F.last("member_id", ignorenulls=True).over(timeline).alias("_owner"))
        .where(F.col("_kind") == 1)
        .select(*[F.col("_owner").alias(c) if c == "member_id" else F.col(c) for c in out_columns])
    )
    return placed if matched is None else placed.unionByName(matched)
