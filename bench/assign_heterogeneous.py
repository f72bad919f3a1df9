"""Benchmark: global balance for heterogeneous subscriptions (sticky, uniform, cooperative-sticky).

Random subscriptions (each member subscribes to each topic with probability 1/2, at least one topic), generated in
Spark; timed from the input frames to the collected output (``to_arrow``), ``assign`` included since heterogeneous
calls run their balancing rounds there. Each case reports the rounds, the jobs, and the spread of counts.

Quick: 100 groups x 10 members x 100 partitions (10 topics) and one group of 10k partitions (100 topics) x 100
members. Full: 1,000 groups x 10 x 100 and one group of 100k partitions (100 topics) x 1,000 members.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

from bench.results_io import write_result

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

ASSIGNORS = ("sticky", "uniform", "cooperative-sticky")


class _RoundCounter(logging.Handler):
    """Counts the rounds the global balance logs."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.rounds = 0

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("round "):
            self.rounds += 1


def _inputs(spark: SparkSession, *, groups: int, members: int, partitions: int,
            topics: int) -> tuple[DataFrame, DataFrame]:
    from pyspark.sql import functions as F

    per_topic = partitions // topics
    names = [F.when(F.rand(7 + t) < 0.5, F.lit(f"t{t}")) for t in range(topics)]
    chosen = F.filter(F.array(*names), lambda t: t.isNotNull())
    fallback = F.array(F.concat(F.lit("t"), (F.col("id") % topics).cast("string")))
    member_rows = spark.range(groups * members).select(
        F.concat(F.lit("g"), (F.col("id") / members).cast("long").cast("string")).alias("group_id"),
        F.concat(F.lit("member-"), (F.col("id") % members).cast("string")).alias("member_id"),
        F.when(F.size(chosen) > 0, chosen).otherwise(fallback).alias("topics"),
    )
    partition_rows = spark.range(groups * partitions).select(
        F.concat(F.lit("g"), (F.col("id") / partitions).cast("long").cast("string")).alias("group_id"),
        F.concat(F.lit("t"), ((F.col("id") % partitions) / per_topic).cast("long").cast("string")).alias("topic"),
        ((F.col("id") % partitions) % per_topic).cast("int").alias("partition"),
    )
    return member_rows.localCheckpoint(), partition_rows.localCheckpoint()


def _case(spark: SparkSession, name: str, *, groups: int, members: int, partitions: int,
          topics: int) -> dict[str, Any]:
    from groupcoord.assignors import get_assignor
    from groupcoord.assignors.collect import to_arrow

    member_frame, partition_frame = _inputs(spark, groups=groups, members=members, partitions=partitions,
                                            topics=topics)
    counter = _RoundCounter()
    logger = logging.getLogger("groupcoord.assignors.global_balance")
    logger.addHandler(counter)
    logger.setLevel(logging.DEBUG)
    context = spark.sparkContext
    tag = f"bench-heterogeneous-{name}-{time.monotonic_ns()}"
    context.setJobGroup(tag, tag)
    started = time.perf_counter()
    try:
        table = to_arrow(get_assignor(name).assign(member_frame, partition_frame))
    finally:
        logger.removeHandler(counter)
    seconds = time.perf_counter() - started
    jobs = len(context.statusTracker().getJobIdsForGroup(tag))
    loads = Counter(zip(table.column("group_id").to_pylist(), table.column("member_id").to_pylist(), strict=True))
    per_group: dict[str, list[int]] = {}
    for (group, _), count in loads.items():
        per_group.setdefault(group, []).append(count)
    spread = max(max(c) - min(c) for c in per_group.values())
    return {"assignor": name, "groups": groups, "members": members, "partitions": partitions, "topics": topics,
            "seconds": round(seconds, 2), "rounds": counter.rounds, "jobs": jobs, "max_spread": spread,
            "rows": table.num_rows}


def main(full: bool) -> None:
    """Run the heterogeneous cases and write ``bench/results/assign_heterogeneous.json``."""
    from groupcoord.spark.session import local_session

    spark = local_session(master="local[*]", app_name="groupcoord-bench-heterogeneous", shuffle_partitions=4,
                          extra={"spark.driver.memory": "6g"})
    sizes = [dict(groups=1000, members=10, partitions=100, topics=10),
             dict(groups=1, members=1000, partitions=100_000, topics=100)] if full else [
        dict(groups=100, members=10, partitions=100, topics=10),
        dict(groups=1, members=100, partitions=10_000, topics=100)]
    _case(spark, "sticky", groups=2, members=3, partitions=6, topics=2)  # warm-up
    rows = [_case(spark, name, **size) for size in sizes for name in ASSIGNORS]
    write_result(
        "assign_heterogeneous",
        title="Assignors: global balance for heterogeneous subscriptions",
        rows=rows,
        notes="Random subscriptions (each topic with probability 1/2); seconds from input frames to to_arrow, "
              "assign included (its rounds run jobs). max_spread is the largest max-min count in a group (balance "
              "is the issue's global definition, which allows more when no move is valid). Shared 2-core machine.",
    )
