"""The single-task plan: inputs the optimiser estimates small run as one partition each, with no exchange, so the
whole assignment is one stage of one task. It must give exactly the hash-partitioned plan's answer, which larger
inputs take (forced here by setting the size limit below every estimate), and the plan made through the public API
only."""

from __future__ import annotations

import time

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import groupcoord.plans.partitioning as partitioning
from groupcoord import plans as plan
from groupcoord.assignors import ASSIGNOR_NAMES, get_assignor
from groupcoord.assignors.frames import MEMBER_SCHEMA, PARTITION_SCHEMA, local_frame
from tests.assignors.builders import two_group_batch
from tests.narrowing import present

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _stages(spark: SparkSession, frame: DataFrame) -> tuple[set[tuple[object, ...]], int]:
    """``frame``'s rows and the number of Spark stages collecting it took."""
    context = spark.sparkContext
    tag = f"single-task-{time.monotonic_ns()}"
    context.setJobGroup(tag, tag)
    try:
        rows = {tuple(row) for row in frame.collect()}
    finally:
        context.setJobGroup("", "")
    tracker = context.statusTracker()
    jobs = [tracker.getJobInfo(job) for job in tracker.getJobIdsForGroup(tag)]
    return rows, sum(len(job.stageIds) for job in jobs if job is not None)


@pytest.mark.parametrize("name", ASSIGNOR_NAMES)
def test_the_single_task_plan_gives_the_hash_plans_answer_and_so_does_the_public_api(
        spark: SparkSession, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The third plan: Spark's internals off (:mod:`groupcoord.plans`'s fallback, as under Spark Connect or
    an unverified Spark): no size estimate (the hash plan), plain local checkpoints, no detached rounds."""
    members, partitions, owned = two_group_batch(spark)
    single = {tuple(r) for r in get_assignor(name).assign(members, partitions, owned).collect()}
    monkeypatch.setattr(partitioning, "SINGLE_TASK_BYTES", -1)
    hashed = {tuple(r) for r in get_assignor(name).assign(members, partitions, owned).collect()}
    monkeypatch.setenv(plan.INTERNALS_ENV, "off")
    public = {tuple(r) for r in get_assignor(name).assign(members, partitions, owned).collect()}
    assert single == hashed == public
    # cooperative-sticky's first round holds back the partitions that change owner
    assert len(single) <= 12 if name == "cooperative-sticky" else len(single) == 12
    # c subscribes to t1 only
    assert {t for g, m, t, _ in single if (g, m) == ("h", "c")} <= {"t1"}


@pytest.mark.parametrize("name", ASSIGNOR_NAMES)
def test_a_small_group_runs_without_exchanges(spark: SparkSession, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """10 members of 4 topics x 25 partitions, nothing owned, no racks: the benchmark's small group. One stage for
    every assignor (weighted's fresh plan has no join of aggregates, which Spark re-shuffled inside the partition)."""
    members = local_frame(spark, [("g", f"m{i}", None, [f"t{t}" for t in range(4)], None) for i in range(10)],
                          MEMBER_SCHEMA).drop("group_id")
    partitions = local_frame(spark, [("g", f"t{t}", p, None, None) for t in range(4) for p in range(25)],
                             PARTITION_SCHEMA).drop("group_id")
    single, single_stages = _stages(spark, get_assignor(name).assign(members, partitions))
    monkeypatch.setattr(partitioning, "SINGLE_TASK_BYTES", -1)
    hashed, hashed_stages = _stages(spark, get_assignor(name).assign(members, partitions))
    assert single == hashed and len(single) == 100
    assert single_stages == 1
    assert hashed_stages > 1  # one map stage per input exchange, then the result stage


def test_an_unbatched_call_estimated_large_keeps_the_hash_plan(spark: SparkSession) -> None:
    members = spark.range(3).select(F.concat(F.lit("m"), F.col("id").cast("string")).alias("member_id"),
                                    F.array(F.lit("t")).alias("topics"))
    # A generated range of 200k partitions is estimated above the limit: its one input exchange stays.
    partitions = spark.range(200_000).select(F.lit("t").alias("topic"), F.col("id").cast("int").alias("partition"))
    rows, stages = _stages(spark, get_assignor("range").assign(members, partitions))
    assert len(rows) == 200_000
    assert stages > 1


def test_the_result_keeps_the_plan_made_under_the_planning_settings(spark: SparkSession) -> None:
    """``assign`` plans its result with adaptive execution off (it would run stages while planning) and restores
    the session's settings; the returned frame keeps that plan, so the caller's action runs it as made."""
    members, partitions, _ = two_group_batch(spark)
    before = present(spark.conf.get("spark.sql.adaptive.enabled"))
    spark.conf.set("spark.sql.adaptive.enabled", "true")
    try:
        result = get_assignor("sticky").assign(members, partitions)
        assert spark.conf.get("spark.sql.adaptive.enabled") == "true"
        assert "AdaptiveSparkPlan" not in result._jdf.queryExecution().executedPlan().toString()
        assert len(result.collect()) == 12
    finally:
        spark.conf.set("spark.sql.adaptive.enabled", before)
