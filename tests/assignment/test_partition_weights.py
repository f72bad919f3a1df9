"""Partition weights reach server-side assignment: the checkpoint job's ``partition_weights`` table (``1 + lag``)
feeds the ``weight`` column of ``server-weighted``, read once per batched call; unmeasured partitions weigh 1.0."""

from __future__ import annotations

import datetime as dt
import logging
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest
from chispa import assert_df_equality
from deltalake import write_deltalake

from groupcoord.admin.checkpoint import WEIGHTS_SCHEMA, write_weights
from groupcoord.assignment.runner import SparkAssignmentRunner
from groupcoord.assignment.weights import DEFAULT_WEIGHT, read_partition_weights, weight_of
from groupcoord.coordinator.effects import AssignmentMember, CompleteAssignment, NeedsAssignment
from groupcoord.protocol.consumer_protocol import decode_assignment
from groupcoord.state_root import StateRoot

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

TOPIC = "t"
PARTITIONS = 4
RUN_TIME = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.UTC)
ASSIGNED_SCHEMA = "group_id string, member_id string, topic string, partition int"


def _lags(rows: list[tuple[str, int, int | None]]) -> pa.Table:
    """A checkpoint snapshot as ``write_weights`` takes it: (group, partition, lag) on topic ``t``."""
    return pa.table({"group_id": [g for g, _, _ in rows], "topic": [TOPIC] * len(rows),
                     "partition": pa.array([p for _, p, _ in rows], pa.int32()),
                     "lag": pa.array([lag for _, _, lag in rows], pa.int64())})


def _needs(group_id: str, *member_ids: str) -> NeedsAssignment:
    return NeedsAssignment(group_id=group_id, generation_id=1, protocol_name="server-weighted", assignor="weighted",
                           members=tuple(AssignmentMember(member_id=m, group_instance_id=None, topics=(TOPIC,),
                                                          owned=(), metadata=b"") for m in member_ids))


def _assigned_rows(answers: list[CompleteAssignment]) -> list[tuple[str, str, str, int]]:
    rows: list[tuple[str, str, str, int]] = []
    for answer in answers:
        assert answer.assignments is not None, answer
        for member_id, encoded in answer.assignments.items():
            rows.extend((answer.group_id, member_id, tp.topic, p)
                        for tp in decode_assignment(encoded).partitions for p in tp.partitions)
    return rows


@pytest.mark.spark
def test_a_heavy_lag_partition_changes_the_weighted_assignment(
        spark: SparkSession, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Group g's partition 0 lags by 999 (weight 1000 of 1003): server-weighted gives it a member of its own and the
    other three to the second member. Group h in the same batch has no weights (1.0 each), and a heavy weight of a
    group outside the batch does not leak into it, so h splits 2 and 2.

    The weighted assignor cuts the running weight sum [0, 1003) at the mean 501.5: partition 0 starts at 0 (first
    member), partitions 1-3 start at 1000-1002 (second member). Unweighted, h's cut is at 2: partitions 0-1, 2-3.
    """
    root = StateRoot.open(tmp_path / "root", create=True)
    write_weights(spark, root, _lags([("g", 0, 999), ("g", 1, 0), ("g", 2, None), ("x", 1, 5000)]),
                  run_id="run-1", run_time=RUN_TIME)
    runner = SparkAssignmentRunner(lambda: {TOPIC: PARTITIONS}, session=lambda: spark,
                                   weights_path=root.partition_weights_path)
    with caplog.at_level(logging.INFO, logger="groupcoord.assignment.runner"):
        answers = runner.assign([_needs("g", "g-a", "g-b"), _needs("h", "h-a", "h-b")])
    assert sum("assigned 2 group(s) with server-weighted" in r.getMessage() for r in caplog.records) == 1

    actual = spark.createDataFrame(_assigned_rows(answers), ASSIGNED_SCHEMA)
    expected = spark.createDataFrame(
        [("g", "g-a", TOPIC, 0), ("g", "g-b", TOPIC, 1), ("g", "g-b", TOPIC, 2), ("g", "g-b", TOPIC, 3),
         ("h", "h-a", TOPIC, 0), ("h", "h-a", TOPIC, 1), ("h", "h-b", TOPIC, 2), ("h", "h-b", TOPIC, 3)],
        ASSIGNED_SCHEMA)
    assert_df_equality(actual, expected, ignore_row_order=True)


def test_read_keeps_the_newest_weight_per_partition_of_the_requested_groups(tmp_path: Path) -> None:
    """Rows of two runs (appended, as a table older than the overwrite-per-run job could hold): the newer wins; an
    invalid newest weight falls back to the default rather than to the older value; other groups are not read."""
    path = tmp_path / "partition_weights"
    earlier, later = RUN_TIME, RUN_TIME + dt.timedelta(minutes=5)

    def rows(run_id: str, when: dt.datetime, weights: list[tuple[str, int, float]]) -> pa.Table:
        return pa.table({"group_id": [g for g, _, _ in weights], "topic": [TOPIC] * len(weights),
                         "partition": pa.array([p for _, p, _ in weights], pa.int32()),
                         "weight": [w for _, _, w in weights], "lag": pa.array([None] * len(weights), pa.int64()),
                         "run_id": [run_id] * len(weights), "updated_at": [when] * len(weights)},
                        ).cast(WEIGHTS_SCHEMA)

    write_deltalake(str(path), rows("new", later, [("g", 0, 7.0), ("g", 1, float("nan")), ("x", 0, 9.0)]))
    write_deltalake(str(path), rows("old", earlier, [("g", 0, 3.0), ("g", 1, 4.0), ("g", 2, 5.0)]), mode="append")
    weights = read_partition_weights(path, {"g"})
    assert weights == {("g", TOPIC, 0): 7.0, ("g", TOPIC, 2): 5.0}
    assert weight_of(weights, "g", TOPIC, 1) == DEFAULT_WEIGHT == weight_of(weights, "x", TOPIC, 0)
    # No checkpoint job ran: nothing to read (group h of the Spark test shows the 1.0 default end to end).
    assert read_partition_weights(tmp_path / "missing", {"g"}) == {}
    assert not (tmp_path / "missing").exists()
    assert read_partition_weights(path, set()) == {}
