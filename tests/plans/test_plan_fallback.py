"""The plan package's public-API fallback: with Spark's internals off, absent or different, the functions answer
through the public API and the assignors give the rows they give with the internals; where the internals are
verified (this Spark), they are really used."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest
from pyspark.sql import DataFrame, SparkSession

import groupcoord.plans.partitioning as partitioning
from groupcoord import plans as plan
from groupcoord.assignors import get_assignor
from groupcoord.plans import gate
from tests.assignors.builders import two_group_batch
from tests.narrowing import present

pytestmark = [pytest.mark.spark]


def _rows(frame: DataFrame) -> set[tuple[object, ...]]:
    return {tuple(row) for row in frame.collect()}


def _grouped(spark: SparkSession) -> DataFrame:
    """Six rows hash-partitioned by ``g`` into two partitions, with a constant ``topic``."""
    return spark.range(6).selectExpr("id % 2 AS g", "'t' AS topic", "id").repartition(2, "g")


@pytest.fixture
def fresh_failures(spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """The session JVM's set of failed features, emptied for this test and restored after it."""
    internals = plan.internals_of(spark)
    assert internals is not None
    failed: set[str] = set()
    monkeypatch.setattr(gate._PROBES[id(internals.jvm)], "failed", failed)
    return failed


@pytest.fixture
def planned_as_assignors_plan(spark: SparkSession) -> Iterator[None]:
    """Adaptive execution off, as the assignors plan (an adaptive plan's partitioning is unknown until it runs)."""
    before = present(spark.conf.get("spark.sql.adaptive.enabled"))
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    yield
    spark.conf.set("spark.sql.adaptive.enabled", before)


@pytest.mark.usefixtures("planned_as_assignors_plan")
def test_this_spark_is_verified_and_each_function_answers_through_the_internals(
        spark: SparkSession, fresh_failures: set[str]) -> None:
    internals = plan.internals_of(spark)
    assert internals is not None and internals.version == spark.version
    assert ".".join(spark.version.split(".")[:2]) in plan.VERIFIED_SPARK_VERSIONS
    frame = _grouped(spark)
    assert plan.max_rows(frame.where("false")) == 0 and (plan.estimated_bytes(frame) or 0) > 0
    assert plan.is_constant_column(frame.select("topic", "id"), "topic")
    assert plan.registered_executors(spark.sparkContext) == 0  # local mode: the driver only
    leaves = (plan.detached(frame), plan.checkpoint_leaf(frame, single_partition=False), plan.plan_now(frame))
    assert all(_rows(leaf) == _rows(frame) for leaf in leaves)
    assert "hashpartitioning(g#" in leaves[1]._jdf.queryExecution().analyzed().outputPartitioning().toString()
    assert plan.failed_features(spark) == frozenset()  # nothing fell back silently


def test_switched_off_every_function_answers_through_the_public_api(
        spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each function's fallback: "unknown" facts, plain local checkpoints with the same rows. (Every assignor's
    rows through the public API equal its rows through the internals: ``tests/assignors/test_single_task_plan.py``.)
    """
    frame = _grouped(spark)
    monkeypatch.setenv(plan.INTERNALS_ENV, "off")
    assert plan.internals_of(spark) is None
    assert plan.max_rows(frame.where("false")) is None and plan.estimated_bytes(frame) is None
    assert not plan.is_constant_column(frame.select("topic", "id"), "topic")
    assert plan.registered_executors(spark.sparkContext) is None
    assert plan.detached(frame) is frame
    for leaf in (plan.checkpoint_leaf(frame, single_partition=False), plan.plan_now(frame)):
        assert leaf is not frame and _rows(leaf) == _rows(frame)


def test_internals_that_differ_fall_back_feature_by_feature(
        spark: SparkSession, monkeypatch: pytest.MonkeyPatch, fresh_failures: set[str]) -> None:
    """A Spark whose ``LogicalRDD`` constructor takes other arguments (simulated by the other verified version's
    layout, so the real constructor call fails in py4j): leaves fall back to plain local checkpoints, the other
    features keep their internals, and the rows stay the same."""
    members, partitions, owned = two_group_batch(spark)
    monkeypatch.setattr(partitioning, "SINGLE_TASK_BYTES", -1)  # hash-partitioned leaves: they are rebuilt
    expected = _rows(get_assignor("range").assign(members, partitions, owned))
    internals = plan.internals_of(spark)
    assert internals is not None
    layout = internals.layout
    other = dataclasses.replace(layout, logical_rdd_checkpoint_flag=not layout.logical_rdd_checkpoint_flag)
    monkeypatch.setattr(internals, "layout", other)
    assert _rows(get_assignor("range").assign(members, partitions, owned)) == expected
    assert plan.failed_features(spark) == {"checkpoint_leaf"}


def test_an_unverified_spark_version_uses_the_public_api_unless_forced(
        spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gate, "_PROBES", {})
    monkeypatch.setattr(gate, "VERIFIED_SPARK_VERSIONS", {"3.5": gate.Layout(logical_rdd_checkpoint_flag=False)})
    assert plan.internals_of(spark) is None
    assert plan.registered_executors(spark.sparkContext) is None
    monkeypatch.setenv(plan.INTERNALS_ENV, "on")
    assert plan.internals_of(spark) is not None
    assert plan.registered_executors(spark.sparkContext) == 0


def test_an_owner_without_a_jvm_uses_the_public_api() -> None:
    """Spark Connect's session and DataFrame raise on ``_jvm`` / ``_jdf``: no internals, no probe."""
    class ConnectLike:
        def __getattr__(self, name: str) -> object:
            raise AttributeError(name)

    assert plan.internals_of(ConnectLike()) is None
    assert plan.failed_features(ConnectLike()) == frozenset()
