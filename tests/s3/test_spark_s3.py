"""The Spark side on S3 (versitygw): the Structured Streaming pipeline with its state root, its checkpoint and its sink
on S3, delta-spark reading the state tables through ``s3a``, and the checkpoint job writing its tables there.

One pipeline runs per module (:func:`pipeline`), in the session's SparkSession, which the ``spark`` fixture started
with the ``s3`` jars and the server's credentials in its JVM's environment (``tests/conftest.py``): a query reads
part of a topic from the state root's embedded log into the ``groupcoord-delta`` sink, is stopped, more records
arrive, and a second start of the same query (same checkpoint, AvailableNow) reads the rest. The endpoint reaches the
executors' Python workers as a ``storage.endpoint`` setting (never a secret), and Spark's S3A through the bucket's
settings set at run time (:func:`groupcoord.spark.s3a.use_s3a`). The tests then check the result from every side.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
import pytest
from kafka.structs import TopicPartition
from pyspark.sql import SparkSession

from bench.s3_server import REGION, S3Server
from groupcoord.admin import checkpoint_job
from groupcoord.admin.checkpoint import CHECKPOINT_TABLE, read_window
from groupcoord.admin.describe import committed_offsets
from groupcoord.assignment.weights import read_partition_weights
from groupcoord.ingest.check import embedded_rows
from groupcoord.ingest.demo_data import create_demo_topic
from groupcoord.sink.table import SinkTable
from groupcoord.source.fences import FENCES_DIR_ENV
from groupcoord.spark import state
from groupcoord.spark.registration import stop_coordinators
from groupcoord.spark.s3a import s3a_checkpoints, use_s3a
from groupcoord.state.schema import OFFSETS
from groupcoord.state.views import read_view
from groupcoord.state_root import StateRoot
from groupcoord.storage import objects
from groupcoord.storage.location import TableLocation, parse_location
from groupcoord.topics import ProducerRecord, TopicLog
from tests.sink.sink_helpers import FAST_COORDINATOR, FAST_MEMBER, QUERY_WAIT_S, wait_until
from tests.sink.supervised import SupervisedQuery

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.integration]

TOPIC = "orders"
GROUP = "s3-ingest"
PARTITIONS = 4
FIRST, LATER = 1200, 400
COLUMNS = ["topic", "partition", "offset", "value"]


@dataclass(frozen=True)
class Pipeline:
    """What the module's pipeline left on S3."""

    root: StateRoot
    sink: TableLocation
    checkpoint: TableLocation
    storage: dict[str, str]
    records: int


def _start(spark: SparkSession, pipeline: Pipeline, *, available_now: bool) -> SupervisedQuery:
    reader = spark.readStream.format("groupcoord").option("group.id", GROUP).option("subscribe", TOPIC) \
        .option("startingOffsets", "earliest").option("state.root", pipeline.root.location.uri) \
        .option("maxOffsetsPerTrigger", "300").options(**FAST_MEMBER, **pipeline.storage)
    writer = reader.load().select(*COLUMNS).writeStream.format("groupcoord-delta") \
        .option("path", pipeline.sink.uri).option("group.id", GROUP) \
        .option("checkpointLocation", pipeline.checkpoint.spark_uri) \
        .option("state.root", pipeline.root.location.uri).options(**pipeline.storage)
    writer = writer.trigger(availableNow=True) if available_now else writer.trigger(processingTime="200 milliseconds")
    return SupervisedQuery(writer.start)


@pytest.fixture(scope="module")
def pipeline(spark: SparkSession, s3_server: S3Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pipeline]:
    """The pipeline on S3, run to completion across a stop and a restart of its query (see the module docstring)."""
    from groupcoord.spark import register

    bucket = s3_server.create_bucket(f"spark-pipeline-{uuid.uuid4().hex[:8]}")
    storage = {"storage.endpoint": s3_server.endpoint, "storage.region": REGION}
    with pytest.MonkeyPatch.context() as patch:
        for name, value in s3_server.env.items():
            patch.setenv(name, value)
        patch.setenv(FENCES_DIR_ENV, str(tmp_path_factory.mktemp("fences")))
        root = StateRoot.open(f"s3://{bucket}/state", create=True, storage=storage)
        done = Pipeline(root, parse_location(f"s3a://{bucket}/sink", settings=storage),
                        parse_location(f"s3://{bucket}/checkpoints/q", settings=storage), storage, FIRST + LATER)
        create_demo_topic(root, TOPIC, partitions=PARTITIONS, records=FIRST)
        conf = {**FAST_COORDINATOR, **{f"spark.groupcoord.{k}": v for k, v in storage.items()}}
        for key, value in conf.items():
            spark.conf.set(key, value)
        try:
            register(spark, state_root=root.location.uri)
            use_s3a(spark, root.location)
            sink = SinkTable(done.sink.uri, GROUP, storage)
            with s3a_checkpoints(spark):
                first = _start(spark, done, available_now=False)
                wait_until(lambda: sink.row_count() >= 300, QUERY_WAIT_S, "the first batches on S3", query=first)
                first.stop()
                assert first.exception() is None
                TopicLog(root, TOPIC).produce(ProducerRecord(f"later-{i}".encode(), partition=i % PARTITIONS)
                                              for i in range(LATER))
                second = _start(spark, done, available_now=True)
                second.awaitTermination(QUERY_WAIT_S)
                assert second.exception() is None
            yield done
        finally:
            stop_coordinators()
            for key in conf:
                spark.conf.unset(key)


def test_the_pipeline_on_s3_writes_every_record_once_across_a_restart(spark: SparkSession, pipeline: Pipeline,
                                                                      s3_env: dict[str, str]) -> None:
    """Every record of the topic once in the sink (read by delta-rs and by delta-spark through s3a), the group's
    committed offsets equal to the sink's versions at the log ends, and Spark's checkpoint on S3."""
    sink = SinkTable(pipeline.sink.uri, GROUP, pipeline.storage)
    rows = sink.read_all(COLUMNS)
    expected = embedded_rows(pipeline.root, [TOPIC]).select(COLUMNS)
    assert rows.num_rows == expected.num_rows == pipeline.records
    assert _sorted(rows) == _sorted(expected)  # every record, once (pyarrow: no Spark job for the comparison)
    use_s3a(spark, pipeline.sink)
    assert spark.read.format("delta").load(pipeline.sink.spark_uri).count() == pipeline.records
    ends = {(TOPIC, p): n for p, n in _log_ends(expected).items()}
    committed = {tp: o for tp, o in committed_offsets(pipeline.root, GROUP).items() if tp[0] == TOPIC}
    held = sink.versions(_partitions())
    assert committed == {(tp.topic, tp.partition): v for tp, v in held.items()} == ends
    assert objects.list_names(pipeline.checkpoint / "offsets"), "Spark's offset log is on S3"


def test_delta_spark_reads_the_state_tables_through_s3a(spark: SparkSession, pipeline: Pipeline,
                                                        s3_env: dict[str, str]) -> None:
    """The state views through delta-spark equal delta-rs's (latest), time travel to the first version, and
    DESCRIBE HISTORY of a state table on S3 (a time resolves to a version first, then reads the same way:
    ``tests/state`` covers it)."""
    latest = state.offsets(spark, pipeline.root)
    mine = read_view(pipeline.root, OFFSETS)
    assert sorted((r["topic"], r["partition"], r["offset"]) for r in latest.collect() if r["group_id"] == GROUP) == \
        sorted((r["topic"], r["partition"], r["offset"]) for r in mine.to_pylist() if r["group_id"] == GROUP)
    first = state.offsets(spark, pipeline.root, as_of=0).where(f"group_id = '{GROUP}'").collect()
    assert sum(r["offset"] for r in first) < pipeline.records  # the first flush, before the rest was committed
    table = pipeline.root.state_table_path("offsets").spark_uri
    history = spark.sql(f"DESCRIBE HISTORY delta.`{table}`").select("version").collect()
    assert {r["version"] for r in history} >= {0, 1}


def test_the_checkpoint_job_writes_its_tables_on_s3(spark: SparkSession, pipeline: Pipeline,
                                                    s3_env: dict[str, str]) -> None:
    """``jobs/offset_checkpoint.py``'s main on the S3 root: delta-spark writes ``offset_checkpoints`` and
    ``partition_weights`` through s3a (their only writer), and delta-rs reads both back."""
    storage = [arg for key, value in pipeline.storage.items() for arg in ("--conf", f"{key}={value}")]
    code = checkpoint_job.main(["--state-root", pipeline.root.location.uri, "--run-id", "run-1", *storage],
                               spark=spark)
    assert code == 0
    window = read_window(pipeline.root.location / CHECKPOINT_TABLE, 10)
    assert set(window.column("run_id").to_pylist()) == {"run-1"}
    assert set(window.column("group_id").to_pylist()) == {GROUP} and set(window.column("lag").to_pylist()) == {0}
    weights = read_partition_weights(pipeline.root.partition_weights_path, [GROUP])
    assert weights == {(GROUP, TOPIC, p): 1.0 for p in range(PARTITIONS)}


def _partitions() -> list[TopicPartition]:
    return [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]


KEYED = pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()), ("value", pa.binary())])


def _sorted(rows: pa.Table) -> list[tuple[object, ...]]:
    return sorted(tuple(row.values()) for row in rows.cast(KEYED).to_pylist())


def _log_ends(records: pa.Table) -> dict[int, int]:
    ends: dict[int, int] = {}
    for row in records.to_pylist():
        ends[row["partition"]] = max(ends.get(row["partition"], 0), row["offset"] + 1)
    return ends

