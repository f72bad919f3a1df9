"""Plain kafka-python consumers ask for server-side assignment through ``ServerSideAssignor``."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.coordinator.assignors.abstract import RebalanceProtocol
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment

from groupcoord.member import GroupMember
from groupcoord.member.kafka_python import ServerSideAssignor
from groupcoord.protocol import JoinGroupRequest
from groupcoord.protocol.consumer_protocol import decode_subscription
from tests.member.conftest import Coordinator, polling, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TOPIC = "orders"
ALL = {TopicPartition(TOPIC, p) for p in range(6)}


def _consumer(stack: Coordinator, assignor: type[ServerSideAssignor]) -> KafkaConsumer:
    # A long session: the coordinator and both consumers share this one process, and kafka-python's network loop
    # holds the GIL for 0.1-0.4 s at a time on a loaded machine; with 6 s a heartbeat arrived too late in CI, the
    # first member's session expired mid-rebalance and the group did not settle within the test's deadline.
    return KafkaConsumer(TOPIC, bootstrap_servers=stack.bootstrap, group_id="billing", enable_auto_commit=False,
                         session_timeout_ms=30000, heartbeat_interval_ms=300, request_timeout_ms=40000,
                         partition_assignment_strategy=[assignor])


def _poll_until(consumers: list[KafkaConsumer], done: Callable[[], bool], timeout_s: float = 60) -> None:
    """Poll each consumer on a thread of its own, as applications do, until ``done()`` holds.

    One thread polling two consumers in turn can starve one of them: an eager rejoin may hold its ``poll`` until
    every member has rejoined, and the member waiting for its turn then misses its session timeout (seen in CI).
    """
    stop = threading.Event()

    def loop(consumer: KafkaConsumer) -> None:
        while not stop.is_set():
            consumer.poll(timeout_ms=50)

    threads = [threading.Thread(target=loop, args=(consumer,), daemon=True) for consumer in consumers]
    for thread in threads:
        thread.start()
    try:
        deadline = time.monotonic() + timeout_s
        while not _holds(done):
            assert time.monotonic() < deadline, "condition not reached in time"
            time.sleep(0.05)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
    assert not any(thread.is_alive() for thread in threads), "a consumer's poll did not return"


def _holds(done: Callable[[], bool]) -> bool:
    """``done()``, read while the polling threads may be changing an assignment (a set copied mid-change)."""
    try:
        return done()
    except RuntimeError:
        return False


def test_the_assignor_names_its_protocol_and_reports_owned_partitions_and_generation() -> None:
    sticky = ServerSideAssignor.named("sticky")
    assert (ServerSideAssignor.name, sticky.name) == ("server-cooperative-sticky", "server-sticky")
    assert ServerSideAssignor.named("server-uniform").name == "server-uniform"
    assert ServerSideAssignor().supported_protocols() == [RebalanceProtocol.COOPERATIVE]
    assert sticky().supported_protocols() == [RebalanceProtocol.EAGER]

    assignor = ServerSideAssignor()
    assignor.on_assignment(ConsumerProtocolAssignment(0, [(TOPIC, [4, 1])], b""), 7)
    subscription = decode_subscription(bytes(assignor.metadata({TOPIC}).encode()))
    assert subscription.topics == (TOPIC,) and subscription.generation_id == 7
    assert [(g.topic, g.partitions) for g in subscription.owned_partitions] == [(TOPIC, (1, 4))]
    assert assignor.assign(cluster=None, members=[]) == {}


@pytest.mark.parametrize("cooperative", [True, False], ids=["cooperative", "eager"])
def test_kafka_python_consumers_with_the_shim_are_assigned_by_the_coordinator(
    coordinator: Callable[..., Coordinator], cooperative: bool,
) -> None:
    stack = coordinator({TOPIC: 6}, cooperative=cooperative)
    assignor = ServerSideAssignor if cooperative else ServerSideAssignor.named("sticky")
    first = _consumer(stack, assignor)
    second: KafkaConsumer | None = None
    try:
        _poll_until([first], lambda: first.assignment() == ALL)
        second = _consumer(stack, assignor)  # joins a stable group: the first rejoins holding every partition
        _poll_until([first, second], lambda: len(first.assignment()) == 3 and len(second.assignment()) == 3)
        assert first.assignment() | second.assignment() == ALL
        joins = stack.observed.requests_of(JoinGroupRequest)
        assert {p.name for j in joins for p in j.protocols} == {assignor.name}
        owned = [decode_subscription(j.protocols[0].metadata).owned_partitions for j in joins]
        assert any(owned) is cooperative  # cooperative members report what they own when they rejoin

        second.close()
        _poll_until([first], lambda: first.assignment() == ALL)
    finally:
        first.close()
        if second is not None:
            second.close()


def test_a_group_member_and_a_kafka_python_consumer_share_a_server_assigned_group(
    coordinator: Callable[..., Coordinator], members: Callable[..., GroupMember],
) -> None:
    stack = coordinator({TOPIC: 6})
    consumer = _consumer(stack, ServerSideAssignor)
    member = members("billing", topics=[TOPIC], bootstrap_servers=stack.bootstrap)
    try:
        with polling([member]):
            _poll_until([consumer], lambda: len(consumer.assignment()) == 3 and len(member.assignment()) == 3)
        assert consumer.assignment() | member.assignment() == ALL
        wait_for(lambda: member.generation.protocol == "server-cooperative-sticky")
    finally:
        consumer.close()
