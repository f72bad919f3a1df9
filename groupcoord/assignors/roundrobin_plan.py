"""``roundrobin``: Kafka's ``RoundRobinAssignor`` without a Python loop.

All partitions in (topic, partition) order are dealt to the members in member order, skipping members that do not
subscribe to the partition's topic. Worked example: C0 and C1 subscribe to t0 and t1, each with three partitions::

    C0: [t0p0, t0p2, t1p1]
    C1: [t0p1, t1p0, t1p2]

Within a topic the deal walks the topic's subscribers cyclically, so only the subscriber a topic *starts* at depends on
the topics before it. Those starting points are one fold per group over its topics (Spark's ``aggregate``, a
constant-time step for topics every member subscribes to), then partitions join their subscriber by index.

When every member of a group is proven to subscribe to the same topics (``Prepared.homogeneous``), the deal is the
partition's index in (topic, partition) order modulo the member count: one window and one join.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from groupcoord.assignors.base import Assignor
from groupcoord.assignors.prepare import Prepared
from groupcoord.assignors.schema import GROUP
from groupcoord.plans.sql import query

_HOMOGENEOUS_SQL = (
    "SELECT p._g, m.member_id, p.topic, p.partition FROM ("
    "SELECT _g, topic, partition, CAST((row_number() OVER (PARTITION BY _g ORDER BY topic, partition) - 1) "
    "% n_subs AS int) AS _r FROM {partitions}) p "
    "JOIN {members} m ON m._g = p._g AND m.rank = p._r"
)
"""Round robin for proven-homogeneous groups: every member takes every topic, so nobody is skipped."""


def _next_start(acc: Column, topic: Column, members: Column) -> Column:
    """The fold step: the index (among the topic's subscribers) the deal starts at, and where the next topic starts."""
    position, count, subs = acc["position"], topic["n_subs"], topic["subs"]
    later = F.filter(subs, lambda r: r >= position)
    first = F.when(subs.isNull(), position).when(F.size(later) > 0, count - F.size(later)).otherwise(F.lit(0))
    last = (first + topic["p"] - 1) % count
    after = F.when(subs.isNull(), last).otherwise(F.element_at(subs, last + 1)) + 1
    return F.struct(
        (after % members).alias("position"),
        F.concat(acc["starts"], F.array(first)).alias("starts"),
    )


@dataclass(frozen=True, kw_only=True)
class RoundRobinAssignor(Assignor):
    """Kafka's round-robin assignor."""

    name: ClassVar[str] = "roundrobin"

    def _plan(self, prepared: Prepared) -> DataFrame:
        if prepared.homogeneous:
            return query(_HOMOGENEOUS_SQL, partitions=prepared.partitions, members=prepared.members)
        n_members = prepared.members.groupBy(GROUP).agg(F.count(F.lit(1)).alias("_n"))
        counts = prepared.partitions.groupBy(GROUP, "topic").agg(
            F.count(F.lit(1)).alias("p"), F.first("n_subs").alias("n_subs")
        )
        subs = prepared.subscriptions.groupBy(GROUP, "topic").agg(F.array_sort(F.collect_list("rank")).alias("_subs"))
        topics = (
            counts.join(subs, [GROUP, "topic"])
            .join(n_members, GROUP)
            .select(
                GROUP,
                "_n",
                F.struct(
                    "topic",
                    F.col("p").cast("int").alias("p"),
                    F.col("n_subs").cast("int").alias("n_subs"),
                    F.when(F.col("n_subs") < F.col("_n"), F.col("_subs")).alias("subs"),
                ).alias("_t"),
            )
        )
        folded = (
            topics.groupBy(GROUP, "_n")
            .agg(F.array_sort(F.collect_list("_t")).alias("_ts"))
            .select(
                GROUP,
                "_ts",
                F.aggregate(
                    "_ts",
                    F.struct(F.lit(0).alias("position"), F.array().cast("array<int>").alias("starts")),
                    lambda acc, t: _next_start(acc, t, F.col("_n").cast("int")),
                )["starts"].alias("_starts"),
            )
        )
        zipped = F.arrays_zip(F.col("_ts.topic").alias("topic"), F.col("_starts").alias("start"))
        starts = folded.select(GROUP, F.explode(zipped).alias("z")).select(
            GROUP, F.col("z.topic").alias("topic"), F.col("z.start").alias("_start")
        )
        index = F.row_number().over(Window.partitionBy(GROUP, "topic").orderBy("partition")) - 1
        dealt = (
            prepared.partitions.join(starts, [GROUP, "topic"])
            .withColumn("sub_index", (F.col("_start") + index) % F.col("n_subs"))
            .select(GROUP, "topic", "partition", "sub_index")
        )
        return dealt.join(prepared.subscriptions.select(GROUP, "topic", "sub_index", "member_id"),
                          [GROUP, "topic", "sub_index"])
