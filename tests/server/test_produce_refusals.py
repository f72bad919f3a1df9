"""Nothing spins: a real producer that groupcoord refuses backs off, as it would against Kafka.

Each case runs a real client (librdkafka through confluent-kafka, and kafka-python) against an endpoint whose every
handler counts the requests it answers, for a few seconds of refusals. A client retrying without backoff sends
thousands of requests a second (librdkafka did, about 175,000 a second, before Produce was served); one that backs off
sends a few. The bound, :data:`MAX_REQUESTS_PER_S`, sits well above a client that honours its backoff (librdkafka's
fastest metadata refresh is every 100 ms, ``topic.metadata.refresh.fast.interval.ms``) and far below a spin.
"""

from __future__ import annotations

import gc
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, Message, Producer
from kafka import KafkaProducer
from kafka.errors import KafkaError as PythonKafkaError

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.api import ApiHandler, Dispatcher, RequestContext
from groupcoord.server.dispatcher import build_dispatcher
from groupcoord.server.versions import ApiKey
from groupcoord.state_root import StateRoot
from groupcoord.topics import TopicCatalog, TopicsConfig
from groupcoord.topics.appender import TopicAppender
from groupcoord.topics.embedded import EmbeddedTopics
from tests.server.conftest import RunningEndpoint

pytestmark = pytest.mark.integration

TOPIC = "events"
REFUSED_SECONDS = 2.0
MAX_REQUESTS_PER_S = 25.0
"""Requests a second a refused client may send on average (librdkafka's metadata refresh backs off from 100 ms)."""


class Counting:
    """An adapter that counts the requests it answers, then answers them with the real one."""

    def __init__(self, key: ApiKey, inner: ApiHandler, counts: Counter[ApiKey], lock: threading.Lock) -> None:
        self._key, self._inner, self._counts, self._lock = key, inner, counts, lock

    async def handle(self, ctx: RequestContext) -> Any:
        """Count, then delegate."""
        with self._lock:
            self._counts[self._key] += 1
        return await self._inner.handle(ctx)

    def error_response(self, ctx: RequestContext, error: ErrorCode) -> Any:
        """Delegate."""
        return self._inner.error_response(ctx, error)


class CountedBroker:
    """An endpoint serving topic ``events`` (2 partitions) with Produce, whose requests are counted per API."""

    def __init__(self, running: RunningEndpoint, counts: Counter[ApiKey], lock: threading.Lock) -> None:
        self.running = running
        self._counts, self._lock = counts, lock

    def counts(self) -> Counter[ApiKey]:
        """The requests answered so far, by API."""
        with self._lock:
            return Counter(self._counts)


@pytest.fixture
def broker(tmp_path: Path, start_endpoint: Callable[..., RunningEndpoint]) -> Iterator[CountedBroker]:
    root = StateRoot.open(tmp_path / "root", create=True)
    TopicCatalog(root).create(TOPIC, 2)
    topics = EmbeddedTopics(root)
    appender = TopicAppender(root, config=TopicsConfig())
    counts: Counter[ApiKey] = Counter()
    lock = threading.Lock()
    real = build_dispatcher(topics=topics, topic_reader=topics, topic_writer=appender)
    counted: Dispatcher = {key: Counting(key, handler, counts, lock) for key, handler in real.items()}
    yield CountedBroker(start_endpoint(counted), counts, lock)
    appender.close()


def _rate(before: Counter[ApiKey], after: Counter[ApiKey], seconds: float) -> float:
    return (after.total() - before.total()) / seconds


def test_librdkafka_producing_to_a_missing_topic_backs_off_until_its_message_times_out(broker: CountedBroker
                                                                                        ) -> None:
    producer = Producer({"bootstrap.servers": broker.running.bootstrap, "message.timeout.ms": int(
        REFUSED_SECONDS * 1000)})
    reports: list[KafkaError | None] = []
    before, started = broker.counts(), time.monotonic()
    producer.produce("missing", b"x", on_delivery=lambda error, _msg: reports.append(error))
    assert producer.flush(REFUSED_SECONDS + 10) == 0
    elapsed = time.monotonic() - started
    after = broker.counts()
    assert len(reports) == 1 and reports[0] is not None  # the record failed: the topic never appeared
    assert after[ApiKey.PRODUCE] == before[ApiKey.PRODUCE]
    assert after[ApiKey.METADATA] > before[ApiKey.METADATA]  # it asked, so it was refused by groupcoord
    assert _rate(before, after, elapsed) < MAX_REQUESTS_PER_S, after - before


def test_kafka_python_producing_to_a_missing_topic_backs_off_until_it_gives_up(broker: CountedBroker) -> None:
    producer = KafkaProducer(bootstrap_servers=broker.running.bootstrap, max_block_ms=int(REFUSED_SECONDS * 1000))
    try:
        before, started = broker.counts(), time.monotonic()
        with pytest.raises(PythonKafkaError):
            producer.send("missing", b"x").get(timeout=REFUSED_SECONDS + 10)
        elapsed = time.monotonic() - started
        after = broker.counts()
    finally:
        producer.close(timeout=5)
    assert after[ApiKey.METADATA] > before[ApiKey.METADATA]
    assert _rate(before, after, elapsed) < MAX_REQUESTS_PER_S, after - before


def test_a_refused_transactional_librdkafka_producer_stops_at_once_and_sends_nothing_more(broker: CountedBroker
                                                                                          ) -> None:
    producer = Producer({"bootstrap.servers": broker.running.bootstrap, "transactional.id": "tx"})
    with pytest.raises(KafkaException) as refused:
        producer.init_transactions(REFUSED_SECONDS + 10)
    error = refused.value.args[0]
    assert error.code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED and not error.retriable()
    settled = broker.counts()
    assert settled[ApiKey.INIT_PRODUCER_ID] <= 2
    time.sleep(REFUSED_SECONDS)  # nothing left to retry
    after = broker.counts()
    assert after[ApiKey.INIT_PRODUCER_ID] == settled[ApiKey.INIT_PRODUCER_ID]
    assert _rate(settled, after, REFUSED_SECONDS) < MAX_REQUESTS_PER_S, after - settled
    del refused, producer  # librdkafka closes its connections when the producer is freed, before the endpoint stops
    gc.collect()


def test_an_idle_idempotent_librdkafka_producer_sends_next_to_nothing(broker: CountedBroker) -> None:
    """The producer half of the spin of issue 21: once its id is granted and its record acknowledged, it is quiet."""
    producer = Producer({"bootstrap.servers": broker.running.bootstrap, "enable.idempotence": True})
    delivered: list[Message] = []
    producer.produce(TOPIC, b"first", partition=0, on_delivery=lambda error, msg: delivered.append(msg))
    assert producer.flush(15) == 0 and len(delivered) == 1 and delivered[0].error() is None
    settled = broker.counts()
    time.sleep(REFUSED_SECONDS)
    after = broker.counts()
    assert _rate(settled, after, REFUSED_SECONDS) < 2.0, after - settled
