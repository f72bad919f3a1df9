"""The shared "fill" step: hand free partitions to members' free slots, same rack first, in a fixed total order.

Each member of a scope (a group, or a group and topic) has ``deficit`` free slots. Slots are laid end to end in member
order and free partitions are numbered in (topic, partition) order; the u-th free partition goes to the u-th slot.
That is one ``row_number``, one running sum, and one running ``last`` over the union of members' starts and the
numbered partitions: no loop, no exploded slot rows, no join. With rack awareness, partitions that have a
replica in a member's rack are matched to that rack's slots first, the same way within each rack.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from groupcoord.assignors.prepare import PARTITION_ORDER
from groupcoord.plans.lineage import cut, single_task_call
from groupcoord.plans.sql import Subquery, query

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


def fill(scope: Sequence[str], free: DataFrame, slots: DataFrame | Subquery, *, rack_aware: bool) -> DataFrame:
    """Assign ``free`` partitions (``scope, topic, partition, racks``) to ``slots`` (``scope, member_id, rank, rack,
    deficit``). The deficits of a scope must add up to its number of free partitions. ``slots`` given as a
    :class:`~groupcoord.plans.sql.Subquery` is nested in the fill's own SQL text when no rack matching runs.

    Returns ``scope, member_id, topic, partition``.
    """
    matched: DataFrame | None = None
    if rack_aware and isinstance(slots, Subquery):
        slots = slots.frame()
    if rack_aware:
        assert isinstance(slots, DataFrame)
        matched = cut(_match_racks(scope, free, slots))
        free = free.join(matched, _unique(*scope, *PARTITION_ORDER), "left_anti")
        used = matched.groupBy(*scope, "member_id").agg(F.count(F.lit(1)).alias("_used"))
        slots = slots.join(used, [*scope, "member_id"], "left").withColumn(
            "deficit", F.col("deficit") - F.coalesce(F.col("_used"), F.lit(0))
        )
    # Slots laid end to end: a member with free slots starts at the running sum of the deficits before it. Members'
    # starts and the free partitions' numbers go on one timeline per scope; each partition takes the last member
    # that started at or before it (one window sort, no exploded slot rows, no join). One SQL text: see
    # :mod:`groupcoord.plans.sql`.
    text = _timeline_sql(tuple(scope), one_partition=single_task_call())
    if isinstance(slots, Subquery):
        placed = slots.nested_in(text, "slots", free=free)
    else:
        placed = query(text, slots=slots, free=free)
    return placed if matched is None else placed.unionByName(matched)


@lru_cache(maxsize=16)
def _timeline_sql(scope: tuple[str, ...], *, one_partition: bool) -> str:
    """The SQL of :func:`fill`'s timeline over ``{slots}`` and ``{free}`` for ``scope``.

    ``one_partition`` (a single-task call): the union is coalesced into its one partition before the window. Spark
    4.2 reports a union of single-partition sides as one partition only when both report the same partitioning, and
    a join side reports ``(SinglePartition or SinglePartition)``: the window then planned an exchange (a second
    stage). Coalescing needs no shuffle, and on a Spark that keeps the union single it costs nothing.
    """
    keys = ", ".join(scope)
    extras = [c for c in PARTITION_ORDER if c not in scope]
    nulls = "".join(f", CAST(NULL AS {_TYPES[c]}) AS {c}" for c in extras)
    running = "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"
    out = ", ".join(
        "_owner AS member_id" if c == "member_id" else c for c in _unique(*scope, "member_id", *PARTITION_ORDER)
    )
    starts = (
        f"SELECT {keys}, _at, 0 AS _kind, member_id{nulls} FROM ("
        f"SELECT {keys}, member_id, deficit, "
        f"CAST(sum(deficit) OVER (PARTITION BY {keys} ORDER BY rank {running}) - deficit AS bigint) AS _at "
        "FROM {slots}) WHERE deficit > 0"
    )
    numbered = (
        f"SELECT {keys}, CAST(row_number() OVER (PARTITION BY {keys} ORDER BY {', '.join(PARTITION_ORDER)}) - 1 "
        f"AS bigint) AS _at, 1 AS _kind, CAST(NULL AS string) AS member_id{''.join(', ' + c for c in extras)} "
        "FROM {free}"
    )
    coalesced, closing = ("SELECT /*+ COALESCE(1) */ * FROM (", ")") if one_partition else ("", "")
    return (
        f"SELECT {out} FROM (SELECT *, last(member_id, true) OVER (PARTITION BY {keys} ORDER BY _at, _kind {running}) "
        f"AS _owner FROM ({coalesced}{starts} UNION ALL {numbered}{closing})) WHERE _kind = 1"
    )
