"""``groupcoord serve --state-root s3://...`` as users run it: a real kafka-python consumer group joins, syncs,
commits and fetches its offsets, a kill -9 of ``serve`` followed by a new one keeps every committed offset, and the
materialized offsets table on S3 shows them (and time-travels)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.errors import RebalanceInProgressError
from kafka.structs import OffsetAndMetadata

from groupcoord.server.api import BrokerAddress
from groupcoord.state.schema import OFFSETS
from groupcoord.state.views import read_view
from groupcoord.state_root import StateRoot
from groupcoord.topics import TopicCatalog
from tests.host.conftest import COMMITTED_TOPICS, ServeProcess, wait_for
from tests.s3.conftest import S3Server

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TOPIC = "t"
PARTITIONS = COMMITTED_TOPICS[TOPIC]
SESSION_TIMEOUT_MS = 10000
WEDGED_S = 20.0
"""How long a consumer may report its group rebalancing before it is replaced (see :func:`_commit_as_a_member`)."""


def _root_with_topics(uri: str) -> str:
    catalog = TopicCatalog(StateRoot.open(uri, create=True))
    for name, partitions in COMMITTED_TOPICS.items():
        catalog.create(name, partitions)
    return uri


def _joined_consumer(address: BrokerAddress) -> KafkaConsumer:
    """A kafka-python consumer of group g1 that joined (JoinGroup, SyncGroup) and got every partition of TOPIC."""
    consumer = KafkaConsumer(group_id="g1", bootstrap_servers=f"{address.host}:{address.port}",
                             enable_auto_commit=False, request_timeout_ms=10000, auto_offset_reset="earliest",
                             session_timeout_ms=SESSION_TIMEOUT_MS)
    # Metadata first: a leader that assigns before it knows the topic assigns nothing and rejoins.
    assert consumer.partitions_for_topic(TOPIC) == set(range(PARTITIONS))
    consumer.subscribe([TOPIC])
    deadline = time.monotonic() + 30
    while len(consumer.assignment()) < PARTITIONS:
        assert time.monotonic() < deadline, f"no assignment within 30 s: {consumer.assignment()}"
        consumer.poll(timeout_ms=200)
    return consumer


def _commit_as_a_member(consumer: KafkaConsumer, offsets: dict[TopicPartition, OffsetAndMetadata],
                        address: BrokerAddress) -> KafkaConsumer:
    """Commit as an application does, and return the consumer that committed.

    When the client finds its group rebalancing (its session lapsed on a loaded machine), poll until it has its
    partitions back and commit again. kafka-python 3.0.12 itself can wedge there: after a rejoin (its first
    assignment is often made before its metadata snapshot settles), it received serve's JoinGroup and SyncGroup
    answers of the new generation without error yet never counted itself stable, so it failed every commit locally
    ("not part of an active group") and sent serve nothing more, not even heartbeats, until its session expired
    (seen about once in 6 runs under load, on this code and on the code before 2026-11-29, the client's debug log
    showing both answers). An application restarts a consumer stuck like that: so does this, after
    :data:`WEDGED_S`, as a new member (the wedged one's session, :data:`SESSION_TIMEOUT_MS`, expires meanwhile).
    """
    deadline = time.monotonic() + 90
    wedged_at = time.monotonic() + WEDGED_S
    while True:
        try:
            consumer.commit(offsets)
            return consumer
        except RebalanceInProgressError:
            assert time.monotonic() < deadline, "the group kept rebalancing for 90 s"
            if time.monotonic() > wedged_at:
                threading.Thread(target=consumer.close, kwargs={"autocommit": False}, daemon=True).start()
                consumer = _joined_consumer(address)
                wedged_at = time.monotonic() + WEDGED_S
            else:
                consumer.poll(timeout_ms=500)


def test_serve_on_s3_keeps_a_kafka_python_groups_offsets_through_kill_9(
        s3_server: S3Server, s3_env: dict[str, str], s3_bucket: str, tmp_path: Path) -> None:
    uri = _root_with_topics(f"s3://{s3_bucket}/root")
    args = ("--conf", "group.initial.rebalance.delay.ms=0")
    first = ServeProcess(uri, *args, env=s3_server.env, log_path=tmp_path / "serve-0.log")
    second: ServeProcess | None = None
    try:
        address = first.wait_ready(60)
        offsets = {TopicPartition(TOPIC, p): OffsetAndMetadata(10 + p, "", -1) for p in range(PARTITIONS)}
        # OffsetCommit, acknowledged once its record-log commit is on S3
        consumer = _commit_as_a_member(_joined_consumer(address), offsets, address)
        assert {tp.partition: consumer.committed(tp) for tp in offsets} == {p: 10 + p for p in range(PARTITIONS)}
        consumer.close(autocommit=False)

        first.kill()  # kill -9: no release of the lease, no flush
        second = ServeProcess(uri, *args, env=s3_server.env, log_path=tmp_path / "serve-1.log")
        address = second.wait_ready(60)  # takes the lease over once it expired (FAST_LEASE)
        # OffsetFetch through kafka-python, which retries what Kafka calls retriable (a coordinator still loading)
        again = KafkaConsumer(group_id="g1", bootstrap_servers=f"{address.host}:{address.port}",
                              enable_auto_commit=False, request_timeout_ms=10000)
        assert {tp.partition: again.committed(tp) for tp in offsets} == {p: 10 + p for p in range(PARTITIONS)}
        again.close(autocommit=False)

        # The holder materialized the offsets into the queryable table on S3, and it time-travels there.
        root = StateRoot.open(uri)
        wait_for(lambda: len(read_view(root, OFFSETS)) == PARTITIONS, 30, "the offsets table on S3")
        assert read_view(root, OFFSETS).column("offset").to_pylist() == [10 + p for p in range(PARTITIONS)]
        assert read_view(root, OFFSETS, as_of=0).column("offset").to_pylist() == [10 + p for p in range(PARTITIONS)]
    finally:
        first.close()
        if second is not None:
            second.close()
