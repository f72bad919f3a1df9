"""ListOffsets and Fetch over the embedded topic log, with a real kafka-python consumer and real Delta tables."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.protocol.consumer import FetchRequest, ListOffsetsRequest

from groupcoord.server.dispatcher import build_dispatcher
from groupcoord.state_root import StateRoot
from groupcoord.topics import ProducerRecord, TopicCatalog, TopicLog
from groupcoord.topics.embedded import EmbeddedTopics
from tests.server.conftest import RawClient, RunningEndpoint

pytestmark = pytest.mark.integration

TOPIC = "events"
PARTITIONS = 3
START = datetime(2024, 1, 1, tzinfo=UTC)


@pytest.fixture
def root(tmp_path: Path) -> StateRoot:
    """A fresh state root."""
    return StateRoot.open(tmp_path / "state", create=True)


@pytest.fixture
def topic_log(root: StateRoot) -> TopicLog:
    """A 3-partition topic holding 30 keyed records, one second apart from ``START``."""
    catalog = TopicCatalog(root)
    catalog.create(TOPIC, PARTITIONS)
    log = TopicLog(root, TOPIC, catalog=catalog)
    log.produce(
        ProducerRecord(f"value-{i}".encode(), key=f"key-{i}".encode(), timestamp=START + timedelta(seconds=i))
        for i in range(30)
    )
    return log


@pytest.fixture
def serving(root: StateRoot, topic_log: TopicLog, start_endpoint: Callable[..., RunningEndpoint]) -> RunningEndpoint:
    """An endpoint serving Metadata, ListOffsets and Fetch over ``topic_log``'s state root."""
    topics = EmbeddedTopics(root)
    return start_endpoint(build_dispatcher(topics=topics, topic_reader=topics))


def _consumer(serving: RunningEndpoint) -> KafkaConsumer:
    return KafkaConsumer(bootstrap_servers=serving.bootstrap, enable_auto_commit=False, consumer_timeout_ms=4000,
                         auto_offset_reset="earliest", request_timeout_ms=10000)


def test_consumer_reads_every_record_in_offset_order(serving: RunningEndpoint, topic_log: TopicLog) -> None:
    consumer = _consumer(serving)
    try:
        consumer.assign([TopicPartition(TOPIC, p) for p in range(PARTITIONS)])
        received = [(m.partition, m.offset, m.key, m.value, m.timestamp) for m in consumer]
    finally:
        consumer.close()
    expected = [
        (r.partition, r.offset, r.key, r.value, int(r.timestamp.timestamp() * 1000))
        for p in range(PARTITIONS)
        for r in topic_log.read_records(p, 0, 100)
    ]
    assert sorted(received) == sorted(expected)
    assert len(received) == 30
    for p in range(PARTITIONS):
        offsets = [offset for partition, offset, *_ in received if partition == p]
        assert offsets == list(range(topic_log.log_end_offset(p)))


def test_beginning_end_and_timestamp_offsets(serving: RunningEndpoint, topic_log: TopicLog) -> None:
    consumer = _consumer(serving)
    partitions = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
    try:
        assert consumer.beginning_offsets(partitions) == dict.fromkeys(partitions, 0)
        ends = consumer.end_offsets(partitions)
        assert ends == {tp: topic_log.log_end_offset(tp.partition) for tp in partitions}
        target = START + timedelta(seconds=15)
        found = consumer.offsets_for_times({tp: int(target.timestamp() * 1000) for tp in partitions})
    finally:
        consumer.close()
    for tp, hit in found.items():
        later = [r for r in topic_log.read_records(tp.partition, 0, 100) if r.timestamp >= target]
        if later:
            assert hit is not None
            assert (hit.offset, hit.timestamp) == (later[0].offset, int(later[0].timestamp.timestamp() * 1000))
        else:
            assert hit is None


def test_list_offsets_for_unknown_topic_is_unknown_topic_or_partition(
    serving: RunningEndpoint, raw_client: Callable[..., RawClient]
) -> None:
    request = ListOffsetsRequest(version=5, replica_id=-1, isolation_level=0, topics=[
        ListOffsetsRequest.ListOffsetsTopic(name="missing", partitions=[
            ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(partition_index=0, timestamp=-1)
        ])
    ])
    response = raw_client(serving.address).request(request)
    assert response.topics[0].partitions[0].error_code == 3


def _fetch(offset: int, *, max_wait_ms: int = 0, partition: int = 0, session_id: int = 0) -> FetchRequest:
    fetch_partition = FetchRequest.FetchTopic.FetchPartition(
        partition=partition, fetch_offset=offset, log_start_offset=-1, partition_max_bytes=1 << 20
    )
    return FetchRequest(version=11, replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 24,
                        isolation_level=0, session_id=session_id, session_epoch=-1, rack_id="",
                        topics=[FetchRequest.FetchTopic(topic=TOPIC, partitions=[fetch_partition])],
                        forgotten_topics_data=[])


def test_fetch_beyond_the_log_end_is_offset_out_of_range(
    serving: RunningEndpoint, topic_log: TopicLog, raw_client: Callable[..., RawClient]
) -> None:
    end = topic_log.log_end_offset(0)
    response = raw_client(serving.address).request(_fetch(end + 5))
    partition = response.responses[0].partitions[0]
    assert partition.error_code == 1
    assert partition.high_watermark == end


def test_fetch_with_an_unknown_session_is_refused(
    serving: RunningEndpoint, raw_client: Callable[..., RawClient]
) -> None:
    response = raw_client(serving.address).request(_fetch(0, session_id=1234))
    assert response.error_code == 70


def test_long_poll_returns_as_soon_as_a_record_is_produced(
    serving: RunningEndpoint, topic_log: TopicLog, raw_client: Callable[..., RawClient]
) -> None:
    end = topic_log.log_end_offset(0)
    producer = threading.Timer(0.5, lambda: topic_log.produce([ProducerRecord(b"late", partition=0)]))
    started = time.monotonic()
    producer.start()
    try:
        response = raw_client(serving.address).request(_fetch(end, max_wait_ms=8000))
    finally:
        producer.join()
    waited = time.monotonic() - started
    partition = response.responses[0].partitions[0]
    assert partition.error_code == 0
    assert partition.high_watermark == end + 1
    assert partition.records  # the new record, well before the 8 s wait ran out
    assert 0.4 < waited < 6


def test_long_poll_without_data_waits_max_wait_ms(
    serving: RunningEndpoint, topic_log: TopicLog, raw_client: Callable[..., RawClient]
) -> None:
    end = topic_log.log_end_offset(1)
    started = time.monotonic()
    response = raw_client(serving.address).request(_fetch(end, max_wait_ms=600, partition=1))
    waited = time.monotonic() - started
    assert response.responses[0].partitions[0].error_code == 0
    assert not response.responses[0].partitions[0].records
    assert waited >= 0.55
