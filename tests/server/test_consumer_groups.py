"""Real kafka-python consumers and admin tooling against the endpoint backed by the core coordinator."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.structs import OffsetAndMetadata

from groupcoord.topics import ProducerRecord, TopicLog
from tests.server.conftest import CoordinatorStack

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TOPIC = "orders"
GROUP = "billing"


def _consumer(stack: CoordinatorStack, **options: object) -> KafkaConsumer:
    return KafkaConsumer(
        TOPIC,
        bootstrap_servers=stack.running.bootstrap,
        group_id=GROUP,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
        request_timeout_ms=10000,
        # With no initial rebalance delay the leader may assign before its first topic metadata arrives; a short
        # metadata age makes it notice the partitions and rejoin quickly, as it would against Kafka.
        metadata_max_age_ms=500,
        **options,
    )


def _poll_until(consumers: list[KafkaConsumer], done: Callable[[], bool], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, "condition not reached in time"
        for consumer in consumers:
            consumer.poll(timeout_ms=100)


def test_two_consumers_split_six_partitions_consume_and_hand_over(
    coordinator_stack: Callable[..., CoordinatorStack],
) -> None:
    # Kafka's initial rebalance delay lets both members into the first generation (see the report on the
    # zero-delay variant, where a member joining during CompletingRebalance sometimes stalls for a request timeout).
    stack = coordinator_stack({TOPIC: 6}, initial_rebalance_delay_ms=500)
    TopicLog(stack.root, TOPIC).produce(ProducerRecord(f"o{i}".encode(), partition=i % 6) for i in range(60))
    first, second = _consumer(stack), _consumer(stack)
    try:
        def split() -> bool:
            a, b = first.assignment(), second.assignment()
            return len(a) == 3 and len(b) == 3 and not a & b

        _poll_until([first, second], split, 30)
        assert first.assignment() | second.assignment() == {TopicPartition(TOPIC, p) for p in range(6)}

        second.close()
        _poll_until([first], lambda: len(first.assignment()) == 6, 10)
    finally:
        first.close()
        second.close()


def test_commit_and_committed_round_trip(coordinator_stack: Callable[..., CoordinatorStack]) -> None:
    # The initial delay, as in the admin test below: without it the test hangs on kafka-python 3.0.12's lost rejoin
    # after an empty first assignment (it did once in a full make test: "No partition metadata for topic orders").
    stack = coordinator_stack({TOPIC: 2}, initial_rebalance_delay_ms=500)
    TopicLog(stack.root, TOPIC).produce(ProducerRecord(f"o{i}".encode(), partition=i % 2) for i in range(10))
    consumer = _consumer(stack)
    try:
        received = 0
        deadline = time.monotonic() + 30
        while received < 10:
            assert time.monotonic() < deadline
            received += sum(len(batch) for batch in consumer.poll(timeout_ms=200).values())
        consumer.commit()
        for partition in range(2):
            assert consumer.committed(TopicPartition(TOPIC, partition)) == 5
        consumer.commit({TopicPartition(TOPIC, 0): OffsetAndMetadata(3, "note", -1)})
        assert consumer.committed(TopicPartition(TOPIC, 0)) == 3
    finally:
        consumer.close()
    assert stack.persisted() > 0


def test_admin_client_lists_and_describes_the_group_and_its_offsets(
    coordinator_stack: Callable[..., CoordinatorStack],
) -> None:
    # The initial delay lets the consumer's first topic metadata arrive before the first generation is assigned, so
    # the test does not depend on the rejoin that an empty first assignment triggers: kafka-python 3.0.12 can lose
    # that rejoin when it outlives a poll (test_kafka_python_rejoin.py shows it deterministically).
    stack = coordinator_stack({TOPIC: 2}, initial_rebalance_delay_ms=500)
    consumer = _consumer(stack)
    admin = KafkaAdminClient(bootstrap_servers=stack.running.bootstrap, request_timeout_ms=10000)
    try:
        _poll_until([consumer], lambda: len(consumer.assignment()) == 2, 30)
        consumer.commit({TopicPartition(TOPIC, 1): OffsetAndMetadata(7, "", -1)})
        listed = admin.list_groups()
        # ListGroups v5 names the group type, "classic" for a group of the classic protocol, as Kafka 4.x does
        expected = {"group_id": GROUP, "protocol_type": "consumer", "group_state": "Stable", "group_type": "classic"}
        assert expected in listed
        described = admin.describe_groups([GROUP])[GROUP]
        assert described["group_state"] == "Stable"
        assert described["protocol_data"] == "range"
        (member,) = described["members"]
        assert member["client_host"] == "/127.0.0.1"
        assert member["member_assignment"]["assigned_partitions"] == [{"topic": TOPIC, "partitions": [0, 1]}]
        offsets = admin.list_group_offsets(GROUP)[GROUP]
        assert offsets == {TopicPartition(TOPIC, 1): OffsetAndMetadata(7, "", -1)}
    finally:
        admin.close()
        consumer.close()


def test_librdkafka_consumer_joins_commits_and_reads_back_its_offset(
    coordinator_stack: Callable[..., CoordinatorStack],
) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    stack = coordinator_stack({TOPIC: 3})
    assigned: list[Any] = []  # confluent_kafka TopicPartitions (the library ships no type hints)
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": stack.running.bootstrap, "group.id": GROUP, "enable.auto.commit": False,
        "session.timeout.ms": 6000, "socket.timeout.ms": 10000,
    })
    try:
        consumer.subscribe([TOPIC], on_assign=lambda _consumer, partitions: assigned.extend(partitions))
        deadline = time.monotonic() + 30
        while not assigned:
            assert time.monotonic() < deadline, "librdkafka got no assignment"
            consumer.poll(0.2)
        assert sorted(p.partition for p in assigned) == [0, 1, 2]
        consumer.commit(offsets=[confluent_kafka.TopicPartition(TOPIC, 1, 11)], asynchronous=False)
        (committed,) = consumer.committed([confluent_kafka.TopicPartition(TOPIC, 1)], timeout=10)
        assert committed.offset == 11
    finally:
        consumer.close()
