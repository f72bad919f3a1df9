"""``groupcoord serve --state-root s3://...`` as users run it: a real kafka-python consumer group joins, syncs,
commits and fetches its offsets, a kill -9 of ``serve`` followed by a new one keeps every committed offset, and the
materialized offsets table on S3 shows them (and time-travels)."""

from __future__ import annotations

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


def _root_with_topics(uri: str) -> str:
    catalog = TopicCatalog(StateRoot.open(uri, create=True))
    for name, partitions in COMMITTED_TOPICS.items():
        catalog.create(name, partitions)
    return uri


def _joined_consumer(address: BrokerAddress) -> KafkaConsumer:
    """A kafka-python consumer of group g1 that joined (JoinGroup, SyncGroup) and got every partition of TOPIC."""
    consumer = KafkaConsumer(group_id="g1", bootstrap_servers=f"{address.host}:{address.port}",
                             enable_auto_commit=False, request_timeout_ms=10000, auto_offset_reset="earliest")
    # Metadata first: a leader that assigns before it knows the topic assigns nothing and rejoins, and that rejoin's
    # rebalance was seen not to complete within 30 s in 2 runs of 4 here (not investigated yet)
    assert consumer.partitions_for_topic(TOPIC) == set(range(PARTITIONS))
    consumer.subscribe([TOPIC])
    deadline = time.monotonic() + 30
    while len(consumer.assignment()) < PARTITIONS:
        assert time.monotonic() < deadline, f"no assignment within 30 s: {consumer.assignment()}"
        consumer.poll(timeout_ms=200)
    return consumer


def _commit_as_a_member(consumer: KafkaConsumer, offsets: dict[TopicPartition, OffsetAndMetadata]) -> None:
    """Commit as an application does: when the client finds its group rebalancing (its session lapsed on a loaded
    machine), poll until it has its partitions back and commit again."""
    deadline = time.monotonic() + 60
    while True:
        try:
            consumer.commit(offsets)
            return
        except RebalanceInProgressError:
            assert time.monotonic() < deadline, "the group kept rebalancing for 60 s"
            consumer.poll(timeout_ms=500)


def test_serve_on_s3_keeps_a_kafka_python_groups_offsets_through_kill_9(
        s3_server: S3Server, s3_env: dict[str, str], s3_bucket: str, tmp_path: Path) -> None:
    uri = _root_with_topics(f"s3://{s3_bucket}/root")
    args = ("--conf", "group.initial.rebalance.delay.ms=0")
    first = ServeProcess(uri, *args, env=s3_server.env, log_path=tmp_path / "serve-0.log")
    second: ServeProcess | None = None
    try:
        consumer = _joined_consumer(first.wait_ready(60))
        offsets = {TopicPartition(TOPIC, p): OffsetAndMetadata(10 + p, "", -1) for p in range(PARTITIONS)}
        _commit_as_a_member(consumer, offsets)  # OffsetCommit, acknowledged once its record-log commit is on S3
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
