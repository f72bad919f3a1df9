"""How a GroupMember handles each group error, with the coordinator driven into producing it (seed 000's cases)."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from kafka.structs import TopicPartition

from groupcoord.member import FencedInstanceIdError, GroupMember, MemberClosedError
from groupcoord.member.connection import BrokerConnection
from groupcoord.member.protocol_machine import MemberFailed, Output
from groupcoord.member.subscription import subscription_metadata
from groupcoord.member.wire import GroupClient
from groupcoord.protocol import JoinGroupRequest, LeaveGroupRequest
from tests.member.conftest import SESSION_TIMEOUT_MS, Coordinator, RecordingListener, poll_until, polling, wait_for

pytestmark = pytest.mark.integration

TOPIC = "orders"
GROUP = "g"
BOTH = [TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)]


def _stable_member(stack: Coordinator, members: Callable[..., GroupMember], listener: RecordingListener,
                   **options: object) -> GroupMember:
    member = members(GROUP, topics=[TOPIC], bootstrap_servers=stack.bootstrap, listener=listener, **options)
    poll_until([member], lambda: len(member.assignment()) == 2)
    return member


def _joins(stack: Coordinator) -> list[str]:
    return [r.member_id for r in stack.observed.requests_of(JoinGroupRequest)]


def test_member_id_required_makes_the_member_rejoin_at_once_with_the_id_it_was_given(
    coordinator: Callable[..., Coordinator], members: Callable[..., GroupMember],
) -> None:
    stack = coordinator({TOPIC: 2})
    member = _stable_member(stack, members, RecordingListener())
    assert stack.observed.errors_of("JoinGroupResponse") == ["MEMBER_ID_REQUIRED", "NONE"]
    assert _joins(stack) == ["", member.member_id]
    assert member.member_id.startswith("groupcoord-member-")


def test_unknown_member_id_after_session_expiry_resets_the_member_id_loses_partitions_and_rejoins(
    coordinator: Callable[..., Coordinator], members: Callable[..., GroupMember],
) -> None:
    stack = coordinator({TOPIC: 2})
    listener = RecordingListener()
    member = _stable_member(stack, members, listener)
    old_id = member.member_id

    stack.clock.offset_ms += SESSION_TIMEOUT_MS + 500  # the coordinator sees a pause longer than the session
    wait_for(lambda: "UNKNOWN_MEMBER_ID" in stack.observed.errors_of("HeartbeatResponse"))
    poll_until([member], lambda: len(member.assignment()) == 2 and member.member_id not in ("", old_id))

    assert listener.events == [("assigned", BOTH), ("lost", BOTH), ("assigned", BOTH)]
    assert _joins(stack)[-2:] == ["", member.member_id]  # the reset id, then the new one (MEMBER_ID_REQUIRED)


def test_illegal_generation_marks_the_generation_lost_and_rejoins_with_the_same_member_id(
    coordinator: Callable[..., Coordinator], members: Callable[..., GroupMember],
) -> None:
    stack = coordinator({TOPIC: 2})
    listener = RecordingListener()
    member = _stable_member(stack, members, listener)
    member_id, generation = member.member_id, member.generation.generation_id

    # Someone rejoins under this member's id with a new subscription: the group moves to the next generation.
    connection = BrokerConnection("127.0.0.1", stack.running.address.port if stack.running else 0,
                                  client_id="other", timeout_ms=10000)
    connection.connect()
    try:
        client = GroupClient(connection)
        joined = client.join_group(group_id=GROUP, member_id=member_id, group_instance_id=None,
                                   session_timeout_ms=SESSION_TIMEOUT_MS, rebalance_timeout_ms=3000,
                                   protocols=[("server-cooperative-sticky", subscription_metadata([TOPIC], [], 9))])
        assert joined.generation_id == generation + 1
        client.sync_group(group_id=GROUP, generation_id=joined.generation_id, member_id=member_id,
                          group_instance_id=None, protocol_name=joined.protocol_name, assignments={},
                          timeout_ms=10000)
    finally:
        connection.close()

    wait_for(lambda: "ILLEGAL_GENERATION" in stack.observed.errors_of("HeartbeatResponse"))
    poll_until([member], lambda: member.generation.generation_id > generation + 1 and len(member.assignment()) == 2)
    assert member.member_id == member_id
    assert listener.events == [("assigned", BOTH), ("lost", BOTH), ("assigned", BOTH)]


def test_rebalance_in_progress_makes_the_member_rejoin_and_keep_its_partitions_cooperatively(
    coordinator: Callable[..., Coordinator], members: Callable[..., GroupMember],
) -> None:
    stack = coordinator({TOPIC: 2})
    listener = RecordingListener()
    first = _stable_member(stack, members, listener)
    first_id, generation = first.member_id, first.generation.generation_id
    second = members(GROUP, topics=[TOPIC], bootstrap_servers=stack.bootstrap)

    # The newcomer's JoinGroup puts the group into a rebalance; the first member learns it from its heartbeat.
    with polling([second]):
        wait_for(lambda: "REBALANCE_IN_PROGRESS" in stack.observed.errors_of("HeartbeatResponse"))
        poll_until([first], lambda: len(first.assignment()) == 1 and len(second.assignment()) == 1)

    assert first.member_id == first_id and first.generation.generation_id > generation
    assert "lost" not in listener.kinds()
    # KIP-429: round one revokes only the partition that moves; round two hands it over (nothing new for us).
    moved = sorted(second.assignment())
    assert listener.events == [("assigned", BOTH), ("revoked", moved), ("assigned", []), ("assigned", [])]


def test_fenced_instance_id_is_fatal_and_names_the_instance_prefix_key(
    coordinator: Callable[..., Coordinator], members: Callable[..., GroupMember],
) -> None:
    stack = coordinator({TOPIC: 2})
    listener = RecordingListener()
    fenced = _stable_member(stack, members, listener, group_instance_id="app-0")
    replacement = members(GROUP, topics=[TOPIC], bootstrap_servers=stack.bootstrap, group_instance_id="app-0")
    poll_until([replacement], lambda: len(replacement.assignment()) == 2)

    wait_for(lambda: "FENCED_INSTANCE_ID" in stack.observed.errors_of("HeartbeatResponse"))
    with pytest.raises(FencedInstanceIdError, match=r"spark\.groupcoord\.instance\.prefix") as raised:
        fenced.poll(timeout_ms=100)
    assert raised.value.group_instance_id == "app-0"
    with pytest.raises(FencedInstanceIdError):
        fenced.commit_sync({BOTH[0]: 1})
    assert "lost" not in listener.kinds()


def test_a_poll_right_after_the_heartbeat_thread_learned_it_was_fenced_raises(
    coordinator: Callable[..., Coordinator], members: Callable[..., GroupMember], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The race behind the test above's flakiness under load: the heartbeat thread has fed FENCED_INSTANCE_ID to the
    machine but not yet raised it (held here between the two), and the application polls in that instant. The poll
    must raise, not return the assignment of a member that is out of the group."""
    stack = coordinator({TOPIC: 2})
    fenced = _stable_member(stack, members, RecordingListener(), group_instance_id="app-0")
    application = threading.current_thread()
    entered, release = threading.Event(), threading.Event()
    react = fenced._react

    def held(output: Output) -> None:
        if isinstance(output, MemberFailed) and threading.current_thread() is not application:
            entered.set()
            release.wait(30)
        react(output)

    monkeypatch.setattr(fenced, "_react", held)
    try:
        replacement = members(GROUP, topics=[TOPIC], bootstrap_servers=stack.bootstrap, group_instance_id="app-0")
        poll_until([replacement], lambda: len(replacement.assignment()) == 2)
        assert entered.wait(30), "the fenced member's heartbeat was never answered FENCED_INSTANCE_ID"
        with pytest.raises(FencedInstanceIdError, match=r"spark\.groupcoord\.instance\.prefix"):
            fenced.poll(timeout_ms=100)
    finally:
        release.set()


def test_close_of_a_static_member_leaves_with_its_instance_id_and_a_closed_member_refuses_calls(
    coordinator: Callable[..., Coordinator], members: Callable[..., GroupMember],
) -> None:
    stack = coordinator({TOPIC: 2})
    listener = RecordingListener()
    member = _stable_member(stack, members, listener, group_instance_id="app-1")
    member_id = member.member_id
    member.close()

    (leave,) = stack.observed.requests_of(LeaveGroupRequest)
    assert [(m.member_id, m.group_instance_id) for m in leave.members] == [(member_id, "app-1")]
    assert stack.observed.errors_of("LeaveGroupResponse") == ["NONE"]
    assert listener.events[-1] == ("revoked", BOTH)
    with pytest.raises(MemberClosedError):
        member.poll()
