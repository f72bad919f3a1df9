"""``readStream.format("groupcoord")`` in local Spark, into Spark's own sinks: Spark's Kafka source schema with every
column (headers included) on the embedded log and on the Kafka broker, the group's committed offsets at the log ends
after AvailableNow and the finished query gone from the group, a topic that grows partitions while the query runs (on
both sources), and bad options named at ``load()``.

(The ``groupcoord-delta`` sink's tests run this source too: one query, two queries handing over, and AvailableNow
across a group, on both sources.)"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chispa import assert_df_equality
from kafka.structs import TopicPartition
from pyspark.sql import DataFrame, SparkSession

from groupcoord.admin.describe import group_members
from groupcoord.devbroker import KafkaBroker
from groupcoord.spark.registration import stop_coordinators
from groupcoord.state_root import StateRoot
from groupcoord.topics import ProducerRecord, TopicCatalog, TopicLog
from tests.sink.sink_helpers import QUERY_WAIT_S, wait_until
from tests.sink.supervised import SupervisedQuery
from tests.source.source_helpers import FAST_CONF, SOURCE_TIMING, Feed, committed

pytestmark = [pytest.mark.spark]

KAFKA_SCHEMA = ("key binary, value binary, topic string, partition int, offset long, timestamp timestamp, "
                "timestampType int, headers array<struct<key: string, value: binary>>")
WHEN = dt.datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=dt.UTC)


@pytest.fixture
def registered(spark: SparkSession, source_root: StateRoot) -> Iterator[StateRoot]:
    """The source registered in the session with fast coordinator settings, and the root's coordinator started."""
    from groupcoord.spark import register

    for key, value in FAST_CONF.items():
        spark.conf.set(key, value)
    try:
        register(spark, state_root=source_root.path)
        yield source_root
    finally:
        stop_coordinators()
        for key in [*FAST_CONF, "spark.groupcoord.state.root"]:
            spark.conf.unset(key)


def _records(topic: str, partitions: int) -> list[tuple[int, ProducerRecord]]:
    """Three records per partition: one with headers, one with a null key and no headers, one with an empty value."""
    return [(p, record) for p in range(partitions) for record in (
        ProducerRecord(f"v{p}-0".encode(), key=f"k{p}".encode(), partition=p, timestamp=WHEN,
                       headers=(("h", b"1"), ("h", None))),
        ProducerRecord(f"v{p}-1".encode(), key=None, partition=p, timestamp=WHEN),
        ProducerRecord(b"", key=b"k", partition=p, timestamp=WHEN))]


def _expected(spark: SparkSession, topic: str, partitions: int) -> DataFrame:
    rows = []
    for p in range(partitions):
        for offset, (_, record) in enumerate(r for r in _records(topic, partitions) if r[0] == p):
            headers = [{"key": k, "value": v} for k, v in record.headers] or None
            rows.append((record.key, record.value, topic, p, offset, WHEN, 0, headers))
    return spark.createDataFrame(rows, KAFKA_SCHEMA)


def _read_available_now(spark: SparkSession, topic: str, group: str, tmp_path: Path,
                        **options: str) -> tuple[DataFrame, list[dict[str, Any]]]:
    """What an AvailableNow query of ``topic`` read, and its progress reports."""
    name = f"q_{uuid.uuid4().hex[:8]}"
    reader = spark.readStream.format("groupcoord").option("group.id", group).option("subscribe", topic) \
        .option("startingOffsets", "earliest").option("includeHeaders", "true")
    for key, value in {**SOURCE_TIMING, **options}.items():
        reader = reader.option(key, value)
    query = SupervisedQuery(reader.load().writeStream.format("memory").queryName(name)
                            .option("checkpointLocation", str(tmp_path / name)).trigger(availableNow=True).start,
                            discard_checkpoint=tmp_path / name)
    try:
        assert query.awaitTermination(QUERY_WAIT_S), "the AvailableNow query did not finish"
        assert query.exception() is None
        return spark.table(name), query.recentProgress
    finally:
        query.stop()


def test_available_now_on_the_embedded_log_reads_spark_kafka_schema_and_commits_the_ends(
        spark: SparkSession, registered: StateRoot, tmp_path: Path) -> None:
    topic, partitions = "orders", 3
    TopicCatalog(registered).create(topic, partitions)
    TopicLog(registered, topic).produce(r for _, r in _records(topic, partitions))
    # A session timeout far longer than the wait below: only a leave removes the finished query's member in time.
    actual, progress = _read_available_now(spark, topic, "embedded-g", tmp_path, maxOffsetsPerTrigger="4",
                                           **{"session.timeout.ms": "120000"})
    wait_until(lambda: group_members(registered, "embedded-g") == [], QUERY_WAIT_S,
               "the finished query to leave the group")
    assert actual.schema.simpleString() == _expected(spark, topic, partitions).schema.simpleString()
    assert_df_equality(actual, _expected(spark, topic, partitions), ignore_row_order=True, ignore_nullable=True)
    ends = {TopicPartition(topic, p): 3 for p in range(partitions)}
    assert committed(registered, "embedded-g", list(ends)) == ends
    # Each batch's progress reports the group's lag at its end (reportLatestOffset): 9 records, at most 4 a batch
    # (admitted evenly: one per partition).
    reported = [_latest(p) for p in progress if p["numInputRows"]]
    assert [r["lagSum"] for r in reported] == [6, 3, 0], reported
    assert reported[-1] == {"group": "embedded-g", "latest": {topic: {"0": 3, "1": 3, "2": 3}},
                            "lag": {topic: {"0": 0, "1": 0, "2": 0}}, "lagSum": 0}


def _latest(progress: dict[str, Any]) -> dict[str, Any]:
    """The source's ``latestOffset`` in one progress report (JSON text in some pyspark versions)."""
    latest = progress["sources"][0]["latestOffset"]
    parsed: dict[str, Any] = json.loads(latest) if isinstance(latest, str) else latest
    return parsed


@pytest.mark.kafka
def test_available_now_on_kafka_reads_spark_kafka_schema_and_commits_the_ends(
        spark: SparkSession, registered: StateRoot, tmp_path: Path, kafka_broker: KafkaBroker) -> None:
    from confluent_kafka import Producer

    bootstrap = kafka_broker.bootstrap
    topic, partitions = f"orders-{uuid.uuid4().hex[:8]}", 2
    kafka_broker.create_topic(topic, partitions)
    producer = Producer({"bootstrap.servers": bootstrap})
    for p, record in _records(topic, partitions):
        producer.produce(topic, value=record.value, key=record.key, partition=p,
                         timestamp=int(WHEN.timestamp() * 1000), headers=list(record.headers) or None)
    assert producer.flush(30) == 0
    group = f"kafka-g-{uuid.uuid4().hex[:8]}"  # the broker's groups are shared by the session
    actual, _ = _read_available_now(spark, topic, group, tmp_path, **{"kafka.bootstrap.servers": bootstrap,
                                                                       "mirrorCommitsToKafka": "true"})
    assert_df_equality(actual, _expected(spark, topic, partitions), ignore_row_order=True, ignore_nullable=True)
    ends = {TopicPartition(topic, p): 3 for p in range(partitions)}
    assert committed(registered, group, list(ends)) == ends
    assert _kafka_committed(bootstrap, group, list(ends)) == ends  # mirrored to the cluster's group of that name


def _kafka_committed(bootstrap: str, group: str, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
    """The committed offsets of ``group`` on the Kafka cluster (a client that does not join)."""
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as KafkaPartition

    client = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        found = client.committed([KafkaPartition(tp.topic, tp.partition) for tp in partitions], timeout=30)
        return {TopicPartition(k.topic, k.partition): k.offset for k in found}
    finally:
        client.close()


@pytest.mark.parametrize("on", ["embedded", pytest.param("kafka", marks=pytest.mark.kafka)])
def test_a_topic_that_grows_partitions_is_read_whole(spark: SparkSession, registered: StateRoot, tmp_path: Path,
                                                     request: pytest.FixtureRequest, on: str) -> None:
    feed = Feed(registered, request.getfixturevalue("kafka_broker") if on == "kafka" else None)
    topic, name = feed.topic("growing"), f"growing_{on}"
    feed.produce(topic, 1, 5)
    reader = spark.readStream.format("groupcoord").option("group.id", "grow-g").option("subscribe", topic) \
        .option("startingOffsets", "earliest")
    for key, value in {**SOURCE_TIMING, **feed.options()}.items():
        reader = reader.option(key, value)
    query = SupervisedQuery(reader.load().selectExpr("partition", "offset", "CAST(value AS STRING) AS value")
                            .writeStream.format("memory").queryName(name)
                            .option("checkpointLocation", str(tmp_path / "ckpt"))
                            .trigger(processingTime="200 milliseconds").start,
                            discard_checkpoint=tmp_path / "ckpt")
    try:
        wait_until(lambda: spark.table(name).count() >= 5, QUERY_WAIT_S, "the first partition's records",
                   query=query)
        feed.grow(topic, 3)
        feed.produce(topic, 3, 4, only=(1, 2))
        wait_until(lambda: spark.table(name).count() >= 13, QUERY_WAIT_S, "the new partitions' records",
                   query=query)
    finally:
        query.stop()
    assert query.exception() is None
    expected = [(p, n, f"{p}-{n}") for p in range(3) for n in range(5 if p == 0 else 4)]
    schema = "partition int, offset long, value string"
    assert_df_equality(spark.table(name), spark.createDataFrame(expected, schema), ignore_row_order=True,
                       ignore_nullable=True)


@pytest.mark.parametrize(("option", "value", "named"), [
    ("bogus", "1", "unknown option 'bogus'"),
    ("kafka.group.id", "x", "option 'kafka.group.id' is not accepted"),
    ("subscribePattern", "o.*", "exactly one of 'subscribe' and 'subscribePattern'"),
])
def test_bad_options_fail_the_query_at_load_naming_them(spark: SparkSession, registered: StateRoot, option: str,
                                                        value: str, named: str) -> None:
    reader = spark.readStream.format("groupcoord").option("group.id", "g").option("subscribe", "t")
    with pytest.raises(Exception) as failure:
        reader.option(option, value).load()
    assert named in str(failure.value)
