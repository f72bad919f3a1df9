"""The state as Spark DataFrames (groupcoord.spark.state), checked with chispa."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from typing import Any

import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession

from groupcoord.spark import state
from groupcoord.spark.state import StateHistoryError, view_schema
from groupcoord.state.materializer import Materializer, MaterializerConfig
from groupcoord.state.schema import TableName
from groupcoord.state_root import StateRoot

from .scenario import LoggedCoordinator, at

pytestmark = pytest.mark.spark


def frame(spark: SparkSession, table: TableName, rows: list[tuple[Any, ...]]) -> Any:
    """An expected DataFrame of ``table``'s view."""
    return spark.createDataFrame(rows, schema=view_schema(table))


def test_views_show_the_latest_generation_offsets_and_no_deleted_keys(
        spark: SparkSession, coordinator: LoggedCoordinator, root: StateRoot) -> None:
    members, first = coordinator.stable_group("g", 2)
    coordinator.commit("g", {("t", 0): 10, ("t", 1): 11}, generation=first, member_id=members[0])
    coordinator.commit("solo", {("x", 0): 5})
    coordinator.materialize()
    committed = at(coordinator.ctx.now)
    second = coordinator.leave_and_rebalance("g", members[1], members[0])
    coordinator.commit("g", {("t", 1): 12}, generation=second, member_id=members[0])
    coordinator.delete_group("solo")
    coordinator.materialize()
    now = at(coordinator.ctx.now)

    assert_df_equality(state.offsets(spark, root), frame(spark, "offsets", [
        ("g", "t", 0, 10, -1, "", committed, None, 1, 1, 1),
        ("g", "t", 1, 12, -1, "", now, None, 2, 4, 1),
    ]), ignore_row_order=True)
    [(_, value)] = coordinator.ctx.coordinator.hard_state().groups
    assert_df_equality(state.groups(spark, str(root.path)), frame(spark, "groups", [
        ("g", 2, "Stable", "consumer", "range", "client-1", 1, at(value.state_timestamp_ms), 3, 1),
    ]))
    assert_df_equality(state.members(spark, root.path), frame(spark, "members", [
        ("g", 2, "client-1", None, "client", "", 10_000, 30_000, ["t"], 3, 1),
    ]))
    assert_df_equality(state.assignments(spark, root), frame(spark, "assignments", [
        ("g", 2, "client-1", None, "t", p, 3, 1) for p in range(4)
    ]), ignore_row_order=True)


def test_who_owned_a_partition_at_a_time_and_at_a_version(
        spark: SparkSession, coordinator: LoggedCoordinator, root: StateRoot) -> None:
    members, _ = coordinator.stable_group("g", 2)
    coordinator.materialize()
    before_rebalance = dt.datetime.now(dt.UTC)
    time.sleep(0.05)
    coordinator.leave_and_rebalance("g", members[1], members[0])
    coordinator.materialize()

    def owner(as_of: Any) -> Any:
        return state.assignments(spark, root, as_of=as_of).where("topic = 't' AND partition = 1") \
            .select("generation", "member_id")

    expected_then = spark.createDataFrame([(1, "client-2")], schema="generation int, member_id string")
    assert_df_equality(owner(before_rebalance.isoformat()), expected_then)
    assert_df_equality(owner(0), expected_then)
    assert_df_equality(owner(None), spark.createDataFrame([(2, "client-1")], schema="generation int, member_id string"))


def test_unwritten_tables_are_empty_frames_and_too_old_points_are_refused(
        spark: SparkSession, root: StateRoot) -> None:
    views: tuple[tuple[TableName, Callable[[SparkSession, StateRoot], DataFrame]], ...] = (
        ("offsets", state.offsets), ("groups", state.groups), ("members", state.members),
        ("assignments", state.assignments))
    for name, read in views:
        empty = read(spark, root)
        assert empty.count() == 0
        assert empty.schema == view_schema(name)

    coordinator = LoggedCoordinator(root)
    coordinator.materializer = Materializer(root, config=MaterializerConfig(retention_hours=0, checkpoint_interval=1))
    for offset in range(3):
        coordinator.commit("solo", {("x", 0): offset})
        coordinator.materialize()
    with pytest.raises(StateHistoryError, match="oldest available point is version 2 at"):
        state.offsets(spark, root, as_of=0)
