"""``groupcoord-delta`` under faults, in local Spark: the driver's commit worker killed between the Delta commit and
the group commit (then a restart from the checkpoint), an executor's Python worker killed mid-batch, a batch
replayed after its partitions moved to another query, and a gap refused until ``reset-offsets`` marks it.

Each runs on the embedded log and on the session's Kafka broker (``source``, in ``conftest.py``), and ends with every
record once in the table (chispa) and the committed offsets equal to the table's versions.
The killing sinks are subclasses defined inside the tests: they travel to Spark's Python workers by value.
"""

from __future__ import annotations

import os
import signal
import sys
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle
from pyspark.errors import StreamingQueryException
from pyspark.sql import SparkSession

from groupcoord.admin.describe import committed_offsets
from groupcoord.sink.batches import SourceBatch
from groupcoord.sink.data_sink import DeltaStreamWriter, GroupcoordDeltaSink, SinkFiles
from groupcoord.sink.plan import TopicPartitionKey
from tests.sink.sink_helpers import (
    QUERY_WAIT_S,
    Source,
    assert_exactly_once,
    sink_rows,
    start_query,
    unique,
    versions,
    wait_until,
)

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]  # pyspark's copy is unannotated

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.faults]


def killing_sink(spark: SparkSession, *, marker: Path, at: str) -> str:
    """Register a ``groupcoord-delta`` that SIGKILLs its Python worker once (``marker``): ``at="write"`` after an
    executor wrote its files, ``at="group-commit"`` after the driver's Delta commit, before the group commit."""
    name = f"groupcoord-delta-kill-{at}-{uuid.uuid4().hex[:6]}"

    def die_once() -> None:
        if not marker.exists():
            marker.touch()
            os.kill(os.getpid(), signal.SIGKILL)

    class KillingWriter(DeltaStreamWriter):
        def write(self, iterator: Any) -> SinkFiles:
            files = super().write(iterator)
            if at == "write" and files.files:
                die_once()
            return files

        def commit_to_group(self, batch: SourceBatch, offsets: Mapping[TopicPartitionKey, int]) -> None:
            if at == "group-commit" and any(r.start > 0 for r in batch.ranges.values()):
                die_once()
            super().commit_to_group(batch, offsets)

    class KillingSink(GroupcoordDeltaSink):
        @classmethod
        def name(cls) -> str:
            return name

        def streamWriter(self, schema: Any, overwrite: bool) -> DeltaStreamWriter:
            writer = super().streamWriter(schema, overwrite)
            return KillingWriter(writer.options, writer.schema)

    spark.dataSource.register(KillingSink)
    return name


def test_a_commit_killed_between_the_delta_commit_and_the_group_commit_is_replayed_on_restart(
        spark: SparkSession, source: Source, tmp_path: Path) -> None:
    topic, table, checkpoint, marker = unique("orders"), tmp_path / "table", tmp_path / "ckpt", tmp_path / "killed"
    source.create(topic, partitions=3, records=1500)
    sink = killing_sink(spark, marker=marker, at="group-commit")
    query = start_query(spark, source, "crash", topic, table, checkpoint, maxOffsetsPerTrigger="300",
                        sink_format=sink)
    with pytest.raises(StreamingQueryException):
        query.awaitTermination(120)
    assert marker.exists()
    written = sink_rows(table).num_rows
    assert written > 300  # the second batch is in the table, its offsets not in the group
    restarted = start_query(spark, source, "crash", topic, table, checkpoint, maxOffsetsPerTrigger="300")
    restarted.awaitTermination(120)
    assert restarted.exception() is None
    assert_exactly_once(spark, source, "crash", topic, table)


def test_an_executor_python_worker_killed_mid_batch_loses_and_duplicates_nothing(
        spark: SparkSession, source: Source, tmp_path: Path) -> None:
    topic, table, marker = unique("orders"), tmp_path / "table", tmp_path / "killed"
    source.create(topic, partitions=4, records=2000)
    sink = killing_sink(spark, marker=marker, at="write")
    query = start_query(spark, source, "worker", topic, table, tmp_path / "ckpt", maxOffsetsPerTrigger="800",
                        sink_format=sink)
    query.awaitTermination(120)
    assert marker.exists(), "a task's Python worker was killed after writing its files"
    assert query.exception() is None  # Spark retried the task
    assert_exactly_once(spark, source, "worker", topic, table)


def test_a_batch_replayed_after_its_partitions_moved_writes_nothing_twice(
        spark: SparkSession, source: Source, tmp_path: Path) -> None:
    """q1's commit dies after its Delta commit; q2 takes q1's partitions, starting from the group's (older)
    offsets; then q1 restarts and Spark replays the dead batch, for partitions another query now owns."""
    topic, table, marker = unique("orders"), tmp_path / "table", tmp_path / "killed"
    source.create(topic, partitions=4, records=2400)
    sink = killing_sink(spark, marker=marker, at="group-commit")
    first = start_query(spark, source, "moved", topic, table, tmp_path / "ckpt1", maxOffsetsPerTrigger="400",
                        sink_format=sink)
    with pytest.raises(StreamingQueryException):
        first.awaitTermination(120)
    second = start_query(spark, source, "moved", topic, table, tmp_path / "ckpt2", available_now=False,
                         maxOffsetsPerTrigger="400")
    wait_until(lambda: sink_rows(table).num_rows >= 2400, QUERY_WAIT_S, "q2 to read every partition")
    replay = start_query(spark, source, "moved", topic, table, tmp_path / "ckpt1", maxOffsetsPerTrigger="400")
    replay.awaitTermination(120)
    second.stop()
    assert replay.exception() is None and second.exception() is None
    assert_exactly_once(spark, source, "moved", topic, table)


def test_a_gap_fails_the_query_until_reset_offsets_marks_it(spark: SparkSession, source: Source,
                                                            tmp_path: Path) -> None:
    """A plain offset commit past the table's version (what a Kafka tool's reset does) is a gap; the same move
    made with ``groupcoord groups reset-offsets --execute`` is allowed, and the skipped records stay skipped (the
    embedded log only: see below)."""
    from groupcoord.admin.holder import admin_session
    from groupcoord.cli.main import main as cli
    from groupcoord.config import resolve_config

    topic, table = unique("orders"), tmp_path / "table"
    source.create(topic, partitions=2, records=400)
    first = start_query(spark, source, "gap", topic, table, tmp_path / "ckpt1")
    first.awaitTermination(120)
    source.append(topic, 200, partitions=2)  # each partition now ends at 300, the table holds up to 200
    with admin_session(source.root, resolve_config()) as client:
        assert not any(e.is_error for e in client.commit_offsets("gap", {(topic, 0): 250}).values())
    refused = start_query(spark, source, "gap", topic, table, tmp_path / "ckpt2")
    with pytest.raises(StreamingQueryException, match=rf"gap in {topic}-0 of group 'gap'.* starts at offset 250"):
        refused.awaitTermination(120)
    assert versions(table, "gap", {(topic, 0): 0}) == {(topic, 0): 200}
    if source.broker is not None:
        # reset-offsets clamps to the state root's embedded log, which does not hold a Kafka-sourced topic (its
        # bounds are 0..0): the reset marker's half runs on the embedded log only.
        return

    assert cli(["groups", "reset-offsets", "--group", "gap", "--topic", f"{topic}:0", "--to-offset", "250",
                "--execute", "--state-root", str(source.root.path)]) == 0
    allowed = start_query(spark, source, "gap", topic, table, tmp_path / "ckpt3")
    allowed.awaitTermination(120)
    assert allowed.exception() is None
    held = sorted((r["partition"], r["offset"]) for r in sink_rows(table).select(["partition", "offset"]).to_pylist())
    assert held == [(0, o) for o in [*range(200), *range(250, 300)]] + [(1, o) for o in range(300)]
    ends = {(topic, 0): 300, (topic, 1): 300}
    assert versions(table, "gap", ends) == ends
    wait_until(lambda: committed_offsets(source.root, "gap") == ends, QUERY_WAIT_S,
               "the group's offsets at the table's")


@pytest.mark.kafka
@pytest.mark.parametrize("source", ["kafka"], indirect=True)
def test_records_that_retention_removed_fail_the_query_or_with_fail_on_data_loss_false_are_skipped(
        spark: SparkSession, source: Source, tmp_path: Path) -> None:
    """Kafka's retention removes records no query read yet (DeleteRecords here): the query fails by default, as Spark's
    Kafka source does; with ``failOnDataLoss`` false it goes on from the log's start, and the sink accepts that one
    jump past its table's version (the embedded log never removes records)."""
    from kafka import KafkaAdminClient
    from kafka.structs import TopicPartition

    assert source.broker is not None
    topic, table = unique("retained"), tmp_path / "table"
    source.create(topic, partitions=2, records=400)
    first = start_query(spark, source, "lost", topic, table, tmp_path / "ckpt")
    first.awaitTermination(120)
    source.append(topic, 200, partitions=2)  # each partition now ends at 300, the table holds up to 200
    admin = KafkaAdminClient(bootstrap_servers=source.broker.bootstrap)
    try:
        admin.delete_records({TopicPartition(topic, 0): 250})
    finally:
        admin.close()
    strict = start_query(spark, source, "lost", topic, table, tmp_path / "ckpt")
    with pytest.raises(StreamingQueryException, match=rf"offset 200 of {topic}-0 is out of the log's range.*"
                                                      r"failOnDataLoss"):
        strict.awaitTermination(120)
    assert versions(table, "lost", {(topic, 0): 0}) == {(topic, 0): 200}

    lenient = start_query(spark, source, "lost", topic, table, tmp_path / "ckpt", failOnDataLoss="false")
    lenient.awaitTermination(120)
    assert lenient.exception() is None
    held = sorted((r["partition"], r["offset"]) for r in sink_rows(table).select(["partition", "offset"]).to_pylist())
    assert held == [(0, o) for o in [*range(200), *range(250, 300)]] + [(1, o) for o in range(300)]
    ends = {(topic, 0): 300, (topic, 1): 300}
    assert versions(table, "lost", ends) == ends
    wait_until(lambda: committed_offsets(source.root, "lost") == ends, QUERY_WAIT_S,
               "the group's offsets at the table's")
