"""Produce over the wire into the embedded topic log: every field kept, each codec, acks, group commit, idempotence
and Kafka's refusals (each with nothing written)."""

from __future__ import annotations

import asyncio
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.protocol.consumer import FetchRequest
from kafka.protocol.metadata import ApiVersionsRequest
from kafka.protocol.producer import InitProducerIdRequest, ProduceRequest
from kafka.record import MemoryRecords, MemoryRecordsBuilder
from kafka.record.default_records import DefaultRecordBatch
from kafka.record.util import calc_crc32c

from groupcoord.server.dispatcher import build_dispatcher
from groupcoord.state_root import StateRoot
from groupcoord.topics import ProducerRecord, TopicCatalog, TopicLog, TopicsConfig
from groupcoord.topics.appender import TopicAppender
from groupcoord.topics.embedded import EmbeddedTopics
from groupcoord.topics.log_table import COMPRESSION_NAMES, CREATE_TIME, LOG_APPEND_TIME
from tests.server.conftest import RawClient, RunningEndpoint, decode_response

pytestmark = pytest.mark.integration

TOPIC = "events"
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
WHEN_MS = 1_767_225_600_123  # 2026-01-01 00:00:00.123 UTC


@dataclass
class Broker:
    """An endpoint serving Produce, Fetch and Metadata over a fresh state root with topic ``events`` (3 partitions)."""

    running: RunningEndpoint
    root: StateRoot
    appender: TopicAppender

    def records(self, partition: int) -> list[Any]:
        """What a fresh reader finds in ``partition`` (durable: another process would see the same)."""
        return TopicLog(StateRoot.open(self.root.path), TOPIC).read_records(partition, 0, 10000)


def _table_version(root: StateRoot) -> int:
    return int(DeltaTable(str(root.topic_path(TOPIC))).version())


@pytest.fixture
def broker(tmp_path: Path, start_endpoint: Callable[..., RunningEndpoint]) -> Iterator[Broker]:
    root = StateRoot.open(tmp_path / "root", create=True)
    catalog = TopicCatalog(root)
    catalog.create(TOPIC, 3)
    topics = EmbeddedTopics(root, catalog=catalog)
    appender = TopicAppender(root, config=TopicsConfig(produce_linger_ms=20))
    running = start_endpoint(build_dispatcher(topics=topics, topic_reader=topics, topic_writer=appender))
    yield Broker(running, root, appender)
    appender.close()


def _consumer(broker: Broker, partition: int) -> KafkaConsumer:
    consumer = KafkaConsumer(bootstrap_servers=broker.running.bootstrap, enable_auto_commit=False,
                             consumer_timeout_ms=4000, request_timeout_ms=10000)
    consumer.assign([TopicPartition(TOPIC, partition)])
    consumer.seek_to_beginning()
    return consumer


def _poll(consumer: KafkaConsumer, count: int) -> list[Any]:
    got: list[Any] = []
    deadline = time.monotonic() + 15
    while len(got) < count and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            got.extend(records)
    consumer.close()
    return got


@pytest.mark.parametrize("codec", CODECS)
def test_every_field_round_trips_through_produce_and_fetch_in_its_codec(broker: Broker, codec: str) -> None:
    producer = KafkaProducer(bootstrap_servers=broker.running.bootstrap,
                             compression_type=None if codec == "none" else codec, linger_ms=50)
    sent: list[dict[str, Any]] = [
        dict(key=b"k0", value=b"v0" * 50, headers=[("trace", b"t1"), ("trace", b"t2"), ("empty", b"")],
             timestamp_ms=WHEN_MS),
        dict(key=None, value=b"v1" * 50, headers=[("only", b"h")], timestamp_ms=WHEN_MS + 1),
        dict(key=b"k2", value=None, headers=[], timestamp_ms=WHEN_MS - 5000),
    ]
    futures = [producer.send(TOPIC, partition=1, **fields) for fields in sent]
    assert [f.get(timeout=15).offset for f in futures] == [0, 1, 2]
    producer.close()

    got = _poll(_consumer(broker, 1), 3)
    assert [(r.key, r.value, list(r.headers), r.timestamp, r.timestamp_type) for r in got] == [
        (s["key"], s["value"], s["headers"], s["timestamp_ms"], CREATE_TIME) for s in sent]
    stored = broker.records(1)
    assert {r.compression for r in stored} == {codec}
    assert stored[0].timestamp == datetime(2026, 1, 1, 0, 0, 0, 123000, tzinfo=UTC)
    batches = list(MemoryRecords(_raw_fetch(broker, 1, version=12).records))
    assert {COMPRESSION_NAMES[b.compression_type] for b in batches} == {codec}


@pytest.mark.parametrize("codec", ["gzip", "zstd"])
def test_an_aiokafka_producer_writes_every_field(broker: Broker, codec: str) -> None:
    from aiokafka import AIOKafkaProducer  # only this test needs it

    async def produce() -> list[int]:
        producer = AIOKafkaProducer(bootstrap_servers=broker.running.bootstrap, compression_type=codec,
                                    acks="all", linger_ms=20)
        await producer.start()
        try:
            futures = [await producer.send(TOPIC, b"aio-%d" % n, key=b"k%d" % n, partition=0,
                                           headers=[("n", b"%d" % n), ("n", b"again")],
                                           timestamp_ms=WHEN_MS + n) for n in range(3)]
            return [(await future).offset for future in futures]
        finally:
            await producer.stop()

    assert asyncio.run(produce()) == [0, 1, 2]
    stored = broker.records(0)
    assert [(r.key, r.value, r.headers, r.timestamp_type, r.compression) for r in stored] == [
        (b"k%d" % n, b"aio-%d" % n, (("n", b"%d" % n), ("n", b"again")), CREATE_TIME, codec) for n in range(3)]
    got = _poll(_consumer(broker, 0), 3)
    assert [(r.value, r.timestamp) for r in got] == [(b"aio-%d" % n, WHEN_MS + n) for n in range(3)]


def test_a_log_stamped_record_is_fetched_as_log_append_time(broker: Broker) -> None:
    TopicLog(broker.root, TOPIC).produce([ProducerRecord(b"stamped", partition=2)])
    (stored,) = broker.records(2)
    assert stored.timestamp_type == LOG_APPEND_TIME
    (got,) = _poll(_consumer(broker, 2), 1)
    assert (got.value, got.timestamp_type) == (b"stamped", LOG_APPEND_TIME)
    assert got.timestamp == (stored.timestamp - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)


@pytest.mark.parametrize("acks", [1, "all"])
def test_an_acknowledged_batch_is_already_durable(broker: Broker, acks: int | str) -> None:
    producer = KafkaProducer(bootstrap_servers=broker.running.bootstrap, acks=acks)
    metadata = producer.send(TOPIC, b"durable", partition=0).get(timeout=15)
    assert [r.value for r in broker.records(0)] == [b"durable"]  # read right after the answer, by a fresh reader
    assert metadata.offset == 0
    producer.close()


def test_acks_zero_gets_no_answer_and_still_lands_in_order(broker: Broker, raw_client: Callable[..., RawClient]
                                                          ) -> None:
    client = raw_client(broker.running.address)
    for n in range(3):
        client.send_raw(client.encode(_produce(0, _batch([b"fire-%d" % n]), acks=0)))
    answered = client.request(_produce(0, _batch([b"acked"])))  # answered: the earlier three got no answer
    assert answered.responses[0].partition_responses[0].base_offset == 3
    assert [r.value for r in broker.records(0)] == [b"fire-0", b"fire-1", b"fire-2", b"acked"]


def test_a_refused_acks_zero_batch_closes_the_connection(broker: Broker, raw_client: Callable[..., RawClient]
                                                         ) -> None:
    client = raw_client(broker.running.address)
    client.send_raw(client.encode(_produce(7, _batch([b"x"]), acks=0)))
    assert client.closed_by_server()
    assert all(broker.records(p) == [] for p in range(3))


def test_concurrent_requests_to_one_partition_are_group_committed(broker: Broker,
                                                                  raw_client: Callable[..., RawClient]) -> None:
    clients = [raw_client(broker.running.address) for _ in range(8)]
    before = _table_version(broker.root)
    bases: list[int] = []

    def produce(client: RawClient, n: int) -> None:
        for round_ in range(3):
            response = client.request(_produce(0, _batch([b"c%d-%d-%d" % (n, round_, i) for i in range(5)])))
            bases.append(response.responses[0].partition_responses[0].base_offset)

    threads = [threading.Thread(target=produce, args=(c, n)) for n, c in enumerate(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(bases) == list(range(0, 8 * 3 * 5, 5))  # every batch contiguous, none lost
    commits = _table_version(broker.root) - before
    assert commits == broker.appender.stats.commits < 8 * 3
    values = [r.value for r in broker.records(0)]
    for n in range(8):
        assert [v for v in values if v.startswith(b"c%d-" % n)] == [
            b"c%d-%d-%d" % (n, r, i) for r in range(3) for i in range(5)]


WINDOW_MS = 1500
"""A batch window long enough that requests sent together all arrive within it, even on a loaded machine."""


def test_requests_to_every_partition_within_one_window_are_one_delta_commit_acknowledged_after_it(
    tmp_path: Path, start_endpoint: Callable[..., RunningEndpoint], raw_client: Callable[..., RawClient]
) -> None:
    root = StateRoot.open(tmp_path / "window", create=True)
    TopicCatalog(root).create(TOPIC, 3)
    appender = TopicAppender(root, config=TopicsConfig(produce_linger_ms=WINDOW_MS))
    topics = EmbeddedTopics(root)
    running = start_endpoint(build_dispatcher(topics=topics, topic_reader=topics, topic_writer=appender))
    clients = [raw_client(running.address) for _ in range(9)]
    before = _table_version(root)
    requests = [_produce(n % 3, _batch([b"w%d-0" % n, b"w%d-1" % n])) for n in range(9)]
    sent = time.monotonic()
    for client, request in zip(clients, requests, strict=True):
        client.send_raw(client.encode(request))
    answers: list[Any] = []
    for client, request in zip(clients, requests, strict=True):
        payload = client.read_frame()
        assert payload is not None
        if not answers:  # the first acknowledgement: the commit holding every batch is already durable
            assert time.monotonic() - sent >= WINDOW_MS / 1000 * 0.9
            assert _table_version(root) == before + 1
        answers.append(decode_response(request, payload).responses[0].partition_responses[0])
    try:
        assert [a.error_code for a in answers] == [0] * 9
        assert _table_version(root) - before == 1 == appender.stats.commits  # nine requests, one Delta commit
        for partition in range(3):
            assert sorted(a.base_offset for a in answers[partition::3]) == [0, 2, 4]
            values = [r.value for r in TopicLog(StateRoot.open(root.path), TOPIC).read_records(partition, 0, 100)]
            for a, n in zip(answers[partition::3], range(partition, 9, 3), strict=True):  # each batch where acked
                assert values[a.base_offset:a.base_offset + 2] == [b"w%d-0" % n, b"w%d-1" % n]
    finally:
        appender.close()


def test_pipelined_produce_requests_of_one_connection_share_a_commit_in_order_and_a_fetch_after_them_sees_them(
    broker: Broker, raw_client: Callable[..., RawClient]
) -> None:
    client = raw_client(broker.running.address)
    before = _table_version(broker.root)
    produces = [_produce(0, _batch([b"p%d-0" % n, b"p%d-1" % n])) for n in range(5)]
    fetch = _fetch_request(0, version=12)
    client.send_raw(b"".join([*(client.encode(r, correlation_id=10 + n) for n, r in enumerate(produces)),
                              client.encode(fetch, correlation_id=99)]))  # one write: librdkafka's in-flight requests
    answers = []
    for request in [*produces, fetch]:
        payload = client.read_frame()
        assert payload is not None
        answers.append(decode_response(request, payload))
    assert [a.header.correlation_id for a in answers] == [10, 11, 12, 13, 14, 99]  # answered in request order
    assert [a.responses[0].partition_responses[0].base_offset for a in answers[:5]] == [0, 2, 4, 6, 8]
    assert _table_version(broker.root) - before == 1 == broker.appender.stats.commits  # five requests, one commit
    fetched = [r.value for b in MemoryRecords(answers[5].responses[0].partitions[0].records) for r in b]
    assert fetched == [b"p%d-%d" % (n, i) for n in range(5) for i in range(2)]  # the Fetch waited for them


def test_idempotent_producer_gets_an_id_and_a_retried_batch_is_not_written_twice(
    broker: Broker, raw_client: Callable[..., RawClient]
) -> None:
    producer = KafkaProducer(bootstrap_servers=broker.running.bootstrap, enable_idempotence=True)
    assert producer.send(TOPIC, b"idem", partition=2).get(timeout=15).offset == 0
    producer.close()

    client = raw_client(broker.running.address)
    init = client.request(InitProducerIdRequest(version=4, transactional_id=None, transaction_timeout_ms=60000,
                                                producer_id=-1, producer_epoch=-1))
    assert init.error_code == 0 and init.producer_id >= 0 and init.producer_epoch == 0
    batch = _batch([b"a", b"b"], producer=(init.producer_id, 0, 0))
    first, retry = (client.request(_produce(2, batch)) for _ in range(2))
    assert [r.responses[0].partition_responses[0].base_offset for r in (first, retry)] == [1, 1]
    gap = client.request(_produce(2, _batch([b"c"], producer=(init.producer_id, 0, 5))))
    assert gap.responses[0].partition_responses[0].error_code == 45  # OUT_OF_ORDER_SEQUENCE_NUMBER
    assert [r.value for r in broker.records(2)] == [b"idem", b"a", b"b"]


def test_a_transactional_producer_is_refused_fatally(broker: Broker, raw_client: Callable[..., RawClient]) -> None:
    client = raw_client(broker.running.address)
    init = client.request(InitProducerIdRequest(version=4, transactional_id="tx", transaction_timeout_ms=60000,
                                                producer_id=-1, producer_epoch=-1))
    assert (init.error_code, init.producer_id) == (53, -1)  # TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    produce = client.request(_produce(0, _batch([b"x"]), transactional_id="tx"))
    assert produce.responses[0].partition_responses[0].error_code == 53
    assert broker.records(0) == []


_BASE_SEQUENCE_OFFSET = struct.calcsize(">qiibIhiqqqh")


def _with_attributes(data: bytes, attributes: int) -> bytes:
    return _patched(data, ">h", DefaultRecordBatch.ATTRIBUTES_OFFSET, attributes)


def _patched(data: bytes, layout: str, offset: int, value: int) -> bytes:
    """``data`` with one header field replaced, and its CRC recomputed."""
    patched = bytearray(data)
    struct.pack_into(layout, patched, offset, value)
    crc = calc_crc32c(memoryview(patched)[DefaultRecordBatch.ATTRIBUTES_OFFSET:])
    struct.pack_into(">I", patched, DefaultRecordBatch.CRC_OFFSET, crc)
    return bytes(patched)


def _corrupted(data: bytes) -> bytes:
    patched = bytearray(data)
    patched[-1] ^= 0xFF
    return bytes(patched)


REFUSALS: dict[str, tuple[Callable[[], Any], int]] = {
    "unknown topic": (lambda: _produce(0, _batch([b"x"]), topic="missing"), 3),
    "unknown partition": (lambda: _produce(3, _batch([b"x"])), 3),
    "codec id 5": (lambda: _produce(0, _with_attributes(_batch([b"x"]), 5)), 76),
    "zstd before v7": (lambda: _produce(0, _batch([b"x" * 100] * 3, codec=4), version=6), 76),
    "two batches": (lambda: _produce(0, _batch([b"x"]) + _batch([b"y"])), 87),
    "no batch": (lambda: _produce(0, b""), 87),
    "magic 1": (lambda: _produce(0, _batch([b"x"], magic=1)), 87),
    "bad crc": (lambda: _produce(0, _corrupted(_batch([b"x"]))), 2),
    "size shorter than a batch header": (lambda: _produce(0, bytes(8) + (5).to_bytes(4, "big") + b"short"), 2),
    "control batch": (lambda: _produce(0, _with_attributes(_batch([b"x"]), 0x20)), 87),
    "acks 2": (lambda: _produce(0, _batch([b"x"]), acks=2), 21),
    "log append time": (lambda: _produce(0, _with_attributes(_batch([b"x"]), 0x08)), 32),
    "producer id without a sequence": (
        lambda: _produce(0, _patched(_batch([b"x"], producer=(9, 0, 0)), ">i", _BASE_SEQUENCE_OFFSET, -1)), 87),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_refused_batches_get_kafkas_error_and_write_nothing(broker: Broker, raw_client: Callable[..., RawClient],
                                                            case: str) -> None:
    build, code = REFUSALS[case]
    before = _table_version(broker.root)
    response = raw_client(broker.running.address).request(build())
    assert response.responses[0].partition_responses[0].error_code == code
    assert _table_version(broker.root) == before


def test_fetch_before_v10_cannot_receive_zstd(broker: Broker, raw_client: Callable[..., RawClient]) -> None:
    raw_client(broker.running.address).request(_produce(1, _batch([b"z" * 200] * 4, codec=4)))
    assert _raw_fetch(broker, 1, version=9).error_code == 76
    assert _raw_fetch(broker, 1, version=10).error_code == 0


def test_api_versions_advertise_produce_and_init_producer_id(broker: Broker,
                                                             raw_client: Callable[..., RawClient]) -> None:
    response = raw_client(broker.running.address).request(
        ApiVersionsRequest(version=3, client_software_name="test", client_software_version="1"))
    ranges = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert ranges[0] == (3, 10) and ranges[22] == (0, 4)


# --- raw request builders ---------------------------------------------------------------------------------------------

def _batch(values: list[bytes], *, codec: int = 0, magic: int = 2, producer: tuple[int, int, int] | None = None
           ) -> bytes:
    pid, epoch, sequence = producer or (-1, -1, -1)
    builder = MemoryRecordsBuilder(magic, codec, 1 << 20, producer_id=pid, producer_epoch=epoch,
                                   base_sequence=sequence)
    for value in values:
        builder.append(WHEN_MS, None, value, [] if magic == 2 else None)
    builder.close()
    return bytes(builder.buffer())


def _produce(partition: int, records: bytes, *, topic: str = TOPIC, acks: int = -1, version: int = 9,
             transactional_id: str | None = None) -> Any:
    data = ProduceRequest.TopicProduceData
    return ProduceRequest(version=version, transactional_id=transactional_id, acks=acks, timeout_ms=10000,
                          topic_data=[data(name=topic, partition_data=[
                              data.PartitionProduceData(index=partition, records=records)])])


def _fetch_request(partition: int, *, version: int) -> Any:
    return FetchRequest(
        version=version, replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 24, isolation_level=0,
        session_id=0, session_epoch=-1, rack_id="", forgotten_topics_data=[],
        topics=[FetchRequest.FetchTopic(topic=TOPIC, partitions=[FetchRequest.FetchTopic.FetchPartition(
            partition=partition, fetch_offset=0, log_start_offset=-1, partition_max_bytes=1 << 20)])])


def _raw_fetch(broker: Broker, partition: int, *, version: int) -> Any:
    client = RawClient(broker.running.address)
    try:
        return client.request(_fetch_request(partition, version=version)).responses[0].partitions[0]
    finally:
        client.close()


def test_a_produce_in_flight_when_the_endpoint_stops_is_told_to_find_the_leader_again(
    tmp_path: Path, start_endpoint: Callable[..., RunningEndpoint], raw_client: Callable[..., RawClient]
) -> None:
    root = StateRoot.open(tmp_path / "slow", create=True)
    TopicCatalog(root).create(TOPIC, 1)
    appender = TopicAppender(root, config=TopicsConfig(produce_linger_ms=2000))  # the batch waits for its commit
    topics = EmbeddedTopics(root)
    running = start_endpoint(build_dispatcher(topics=topics, topic_reader=topics, topic_writer=appender))
    client = raw_client(running.address)
    request = _produce(0, _batch([b"late"]))
    client.send_raw(client.encode(request))
    time.sleep(0.3)
    running.call(running.endpoint.stop())
    payload = client.read_frame()
    assert payload is not None
    answer = decode_response(request, payload)
    assert answer.responses[0].partition_responses[0].error_code == 6  # NOT_LEADER_OR_FOLLOWER: retriable
    appender.close()
