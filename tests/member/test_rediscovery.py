"""Coordinator failover (seed 000): the member rediscovers the coordinator through the lease table, with backoff,
and keeps its assignment and generation meanwhile; committed offsets survive the failover."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kafka.structs import OffsetAndMetadata, TopicPartition

from groupcoord.member import CommitFailedError, GroupMember
from groupcoord.protocol import HeartbeatRequest, JoinGroupRequest
from tests.member.conftest import Coordinator, RecordingListener, poll_until, wait_for

pytestmark = pytest.mark.integration

TOPIC = "orders"
P0 = TopicPartition(TOPIC, 0)


def test_member_keeps_its_assignment_while_the_coordinator_is_down_and_resumes_on_the_restarted_one(
    coordinator: Callable[..., Coordinator], members: Callable[..., GroupMember],
) -> None:
    stack = coordinator({TOPIC: 3})
    listener = RecordingListener()
    member = members(topics=[TOPIC], state_root=stack.root.path, listener=listener)
    poll_until([member], lambda: len(member.assignment()) == 3)
    generation, owned, first_port = member.generation, member.assignment(), stack.bootstrap
    member.commit_sync({P0: 11})
    joins = len(stack.observed.requests_of(JoinGroupRequest))

    stack.stop()
    assert member.poll(timeout_ms=300) == owned  # no coordinator: keep consuming what we own
    with pytest.raises(CommitFailedError, match="timed out"):
        member.commit_sync({P0: 12}, timeout_ms=300)

    stack.start()  # a fresh core loaded from the log, on another port, advertised in the lease
    assert stack.bootstrap != first_port
    heartbeats = len(stack.observed.requests_of(HeartbeatRequest))
    wait_for(lambda: stack.observed.errors_of("HeartbeatResponse")[heartbeats:].count("NONE") >= 2)

    assert member.poll(timeout_ms=300) == owned
    assert member.generation == generation
    assert listener.events == [("assigned", sorted(owned))]  # nothing revoked or lost across the failover
    assert len(stack.observed.requests_of(JoinGroupRequest)) == joins  # the loaded group took our heartbeats
    assert member.committed([P0]) == {P0: OffsetAndMetadata(11, "", -1)}
    member.commit_sync({P0: 12})
    assert member.committed([P0]) == {P0: OffsetAndMetadata(12, "", -1)}


def test_member_that_starts_before_any_coordinator_joins_once_one_holds_the_lease(
    coordinator: Callable[..., Coordinator], members: Callable[..., GroupMember],
) -> None:
    stack = coordinator({TOPIC: 2})
    stack.stop()
    member = members(topics=[TOPIC], state_root=stack.root.path)
    assert member.poll(timeout_ms=200) == frozenset()
    stack.start()
    poll_until([member], lambda: len(member.assignment()) == 2)
