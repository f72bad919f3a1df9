"""ConsumerGroupHeartbeat in the core (KIP-848): joining, the group epoch and its target assignment (asked of the
shell), reconciliation through the heartbeats, leaving, static members, and the session and rebalance timers."""

from __future__ import annotations

import dataclasses

import pytest

from groupcoord.coordinator import CompleteTargetAssignment, NeedsTargetAssignment
from groupcoord.coordinator.consumer_records import (
    ConsumerGroupMetadataRecord,
    ConsumerMemberMetadataRecord,
    CurrentAssignmentRecord,
    TargetAssignmentMemberRecord,
)
from groupcoord.group import GroupState
from groupcoord.group.consumer_group import ConsumerGroupState
from groupcoord.group.consumer_member import MemberState
from groupcoord.log.memory import InMemoryRecordLog
from groupcoord.protocol import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    Errors,
    JoinGroupProtocol,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitTopic,
)
from groupcoord.protocol.requests import MemberIdentity
from tests.coordinator.context import subscription
from tests.narrowing import present

from .consumer_context import CONFIG, REBALANCE_MS, SESSION_MS, ConsumerGroupContext, T, U, parts


@pytest.fixture
def ctx() -> ConsumerGroupContext:
    """A coordinator whose shell answers every target at once."""
    return ConsumerGroupContext(InMemoryRecordLog())


def _stable_pair(ctx: ConsumerGroupContext, *, instance_b: str | None = None) -> None:
    """a and b share t (a: 0-1, b: 2-3), both Stable at epoch 2."""
    ctx.join("a")
    ctx.join("b", instance_id=instance_b)
    ctx.beat("a", 1, parts(T, 0, 1, 2, 3))
    ctx.beat("a", 1, parts(T, 0, 1))
    ctx.beat("b", 2, {}, instance_id=instance_b)


def test_first_member_joins_and_gets_every_partition_at_epoch_one(ctx: ConsumerGroupContext) -> None:
    """The join creates the group at epoch 1, asks the shell for the target of epoch 1, and is answered with
    epoch 1 and all of t, with the heartbeat interval; the records are Kafka's: member metadata, epoch, target,
    target epoch, current assignment."""
    answer = ctx.join("a")
    assert (answer.error, answer.member_id, answer.member_epoch) == (Errors.NONE, "a", 1)
    assert answer.assignment == parts(T, 0, 1, 2, 3)
    assert answer.heartbeat_interval_ms == 5000
    group = present(ctx.coordinator.consumer_group("g"))
    assert (group.group_epoch, group.target_assignment_epoch, group.state) == (1, 1, ConsumerGroupState.STABLE)
    kinds = [type(r).__name__ for r in ctx.records]
    assert kinds == ["ConsumerMemberMetadataRecord", "ConsumerGroupMetadataRecord", "TargetAssignmentMemberRecord",
                     "TargetAssignmentMetadataRecord", "CurrentAssignmentRecord"]


def test_a_heartbeat_waits_while_the_target_is_computed() -> None:
    """While the shell computes the target, the joining heartbeat is parked (no answer, group Assigning); the
    answer comes with the target, in the result of complete_target_assignment."""
    ctx = ConsumerGroupContext(InMemoryRecordLog(), auto_assign=False)
    token = ctx._tokens.__next__()
    ctx.absorb(ctx.coordinator.consumer_group_heartbeat(ConsumerGroupHeartbeatRequest(
        group_id="g", member_id="a", member_epoch=0, rebalance_timeout_ms=REBALANCE_MS,
        subscribed_topic_names=("t", "u"), topic_partitions={}), ctx.now, token))
    assert ctx.response(token) is None
    (effect,) = ctx.pending
    assert isinstance(effect, NeedsTargetAssignment)
    assert (effect.group_id, effect.group_epoch, effect.assignor) == ("g", 1, "uniform")
    assert [(m.member_id, m.subscribed_topic_ids) for m in effect.members] == [("a", (T, U))]
    assert [(t.name, t.partitions) for t in effect.topics] == [("t", 4), ("u", 2)]
    assert present(ctx.coordinator.consumer_group("g")).state is ConsumerGroupState.ASSIGNING
    ctx.assign_pending()
    answer = ctx.response(token)
    assert isinstance(answer, ConsumerGroupHeartbeatResponse)
    assert (answer.member_epoch, answer.assignment) == (1, {T: frozenset(range(4)), U: frozenset({0, 1})})


def test_a_second_member_gets_partitions_only_after_the_first_revoked_them(ctx: ConsumerGroupContext) -> None:
    """KIP-848's protocol: b's join bumps the epoch to 2; a must first revoke t-2, t-3 (it stays at epoch 1), b is
    at epoch 2 without them while a holds them; once a reports them gone it moves to epoch 2 and b gets them."""
    ctx.join("a")
    joined = ctx.join("b")
    assert (joined.member_epoch, joined.assignment) == (2, {})
    assert present(ctx.coordinator.consumer_group("g")).members["b"].state is MemberState.UNRELEASED_PARTITIONS

    revoking = ctx.beat("a", 1, parts(T, 0, 1, 2, 3))
    assert (revoking.member_epoch, revoking.assignment) == (1, parts(T, 0, 1))
    assert ctx.beat("b", 2, {}).assignment is None  # still held by a
    moved = ctx.beat("a", 1, parts(T, 0, 1))
    assert (moved.member_epoch, moved.assignment) == (2, None)
    assert ctx.beat("b", 2, {}).assignment == parts(T, 2, 3)
    assert present(ctx.coordinator.consumer_group("g")).state is ConsumerGroupState.STABLE


def test_a_member_leaving_frees_its_partitions_and_bumps_the_epoch(ctx: ConsumerGroupContext) -> None:
    """Epoch -1: the member's tombstones (current assignment, target, metadata), a new epoch, and the remaining
    member gets everything at epoch 3."""
    _stable_pair(ctx)
    ctx.records.clear()
    left = ctx.leave("b")
    assert (left.member_id, left.member_epoch) == ("b", -1)
    tombstones = [r for r in ctx.records if getattr(r, "member_id", None) == "b"]
    assert [type(r) for r in tombstones] == [CurrentAssignmentRecord, TargetAssignmentMemberRecord,
                                             ConsumerMemberMetadataRecord]
    assert all(getattr(r, "value", getattr(r, "partitions", None)) is None for r in tombstones)
    assert any(isinstance(r, ConsumerGroupMetadataRecord) and r.epoch == 3 for r in ctx.records)
    answer = ctx.beat("a", 2, parts(T, 0, 1))
    assert (answer.member_epoch, answer.assignment) == (3, parts(T, 0, 1, 2, 3))


def test_the_last_member_leaving_leaves_an_empty_group_without_asking_the_shell() -> None:
    """A group left without members gets its (empty) target at once: Empty, target epoch = group epoch."""
    ctx = ConsumerGroupContext(InMemoryRecordLog())
    ctx.join("a")
    ctx.auto_assign = False
    ctx.leave("a")
    group = present(ctx.coordinator.consumer_group("g"))
    assert (group.state, group.group_epoch, group.target_assignment_epoch) == (ConsumerGroupState.EMPTY, 2, 2)
    assert ctx.pending == []


def test_static_member_leaves_for_a_while_and_its_new_incarnation_takes_its_place(
        ctx: ConsumerGroupContext) -> None:
    """Epoch -2 keeps the static member (and its partitions) at epoch -2 without a new epoch; the instance's
    rejoin under a new member id replaces it with its assignment, still without a new epoch."""
    _stable_pair(ctx, instance_b="i-b")
    assert (ctx.leave("b", -2, instance_id="i-b").member_epoch) == -2
    group = present(ctx.coordinator.consumer_group("g"))
    assert group.group_epoch == 2 and group.members["b"].member_epoch == -2
    back = ctx.join("b2", instance_id="i-b")
    assert (back.member_id, back.member_epoch, back.assignment) == ("b2", 2, parts(T, 2, 3))
    assert not group.has_member("b") and group.static_member_id("i-b") == "b2"
    assert group.group_epoch == 2 and group.target_assignment_of("b2") == parts(T, 2, 3)


def test_a_member_that_stops_heartbeating_is_fenced_after_its_session(ctx: ConsumerGroupContext) -> None:
    """The session timer restarts with each heartbeat; after the session timeout without one the member is
    removed and the group moves on to a new epoch."""
    _stable_pair(ctx)
    for _ in range(3):
        ctx.sleep(SESSION_MS - 1000)
        ctx.beat("a", 2, parts(T, 0, 1))
    group = present(ctx.coordinator.consumer_group("g"))
    assert not group.has_member("b") and group.group_epoch == 3
    assert group.members["a"].member_epoch == 3 and group.members["a"].assigned_partitions == parts(T, 0, 1, 2, 3)


def test_a_member_that_does_not_revoke_within_its_rebalance_timeout_is_fenced(ctx: ConsumerGroupContext) -> None:
    """a must give up t-2, t-3 for b; it keeps heartbeating but still reports them: after its rebalance timeout
    it is fenced, and b gets what a held."""
    ctx.join("a")
    ctx.join("b")
    ctx.beat("a", 1, parts(T, 0, 1, 2, 3))
    ctx.sleep(REBALANCE_MS - 1)
    ctx.beat("a", 1, parts(T, 0, 1, 2, 3))
    ctx.beat("b", 2, {})
    ctx.sleep(1)
    group = present(ctx.coordinator.consumer_group("g"))
    assert not group.has_member("a") and group.group_epoch == 3
    fenced = ctx.beat("a", 1, parts(T, 0, 1, 2, 3))
    assert fenced.error == Errors.UNKNOWN_MEMBER_ID
    assert ctx.beat("b", 2, {}).assignment == parts(T, 0, 1, 2, 3)


def test_a_target_for_an_old_epoch_is_dropped_and_the_newest_is_used() -> None:
    """Two joins while the shell is slow: the answer for epoch 1 comes after epoch 2 began and is dropped; the
    heartbeats wait for epoch 2's target and get it."""
    ctx = ConsumerGroupContext(InMemoryRecordLog(), auto_assign=False)
    first, second = 101, 102
    for token, member in ((first, "a"), (second, "b")):
        ctx.absorb(ctx.coordinator.consumer_group_heartbeat(ConsumerGroupHeartbeatRequest(
            group_id="g", member_id=member, member_epoch=0, rebalance_timeout_ms=REBALANCE_MS,
            subscribed_topic_names=("t",), topic_partitions={}), ctx.now, token))
    assert [e.group_epoch for e in ctx.pending] == [1, 2]
    ctx.absorb(ctx.coordinator.complete_target_assignment(
        CompleteTargetAssignment(group_id="g", group_epoch=1, assignment={"a": parts(T, 0, 1, 2, 3)}), ctx.now))
    assert ctx.response(first) is None and present(ctx.coordinator.consumer_group("g")).target_assignment_epoch == 0
    ctx.pending.pop(0)
    ctx.assign_pending()
    a, b = ctx.response(first), ctx.response(second)
    assert isinstance(a, ConsumerGroupHeartbeatResponse) and isinstance(b, ConsumerGroupHeartbeatResponse)
    assert (a.member_epoch, a.assignment, b.member_epoch, b.assignment) == (2, parts(T, 0, 1), 2, parts(T, 2, 3))


def test_a_failed_target_answers_the_waiting_heartbeats_with_its_error_and_is_asked_again() -> None:
    """The shell's error goes to every parked heartbeat; the next heartbeat asks for the target again."""
    ctx = ConsumerGroupContext(InMemoryRecordLog(), auto_assign=False)
    token = 7
    ctx.absorb(ctx.coordinator.consumer_group_heartbeat(ConsumerGroupHeartbeatRequest(
        group_id="g", member_id="a", member_epoch=0, rebalance_timeout_ms=REBALANCE_MS,
        subscribed_topic_names=("t",), topic_partitions={}), ctx.now, token))
    (effect,) = ctx.pending
    ctx.pending.clear()
    ctx.absorb(ctx.coordinator.complete_target_assignment(CompleteTargetAssignment(
        group_id="g", group_epoch=effect.group_epoch, error=Errors.UNKNOWN_SERVER_ERROR), ctx.now))
    failed = ctx.response(token)
    assert isinstance(failed, ConsumerGroupHeartbeatResponse) and failed.error == Errors.UNKNOWN_SERVER_ERROR
    ctx.auto_assign = True
    ctx.absorb(ctx.coordinator.consumer_group_heartbeat(ConsumerGroupHeartbeatRequest(
        group_id="g", member_id="a", member_epoch=0, rebalance_timeout_ms=REBALANCE_MS,
        subscribed_topic_names=("t",), topic_partitions={}), ctx.now, 8))
    ctx.assign_pending()
    again = ctx.response(8)
    assert isinstance(again, ConsumerGroupHeartbeatResponse) and again.member_epoch == 1


def test_a_subscription_change_bumps_the_epoch_and_moves_partitions(ctx: ConsumerGroupContext) -> None:
    """a adds u: a new epoch and a target with u; the same subscription again changes nothing."""
    ctx.join("a")
    answer = ctx.beat("a", 1, parts(T, 0, 1, 2, 3), topics=("t", "u"))
    assert (answer.member_epoch, answer.assignment) == (2, {T: frozenset(range(4)), U: frozenset({0, 1})})
    assert ctx.beat("a", 2, {T: range(4), U: (0, 1)}, topics=("t", "u")).member_epoch == 2
    assert present(ctx.coordinator.consumer_group("g")).group_epoch == 2


def test_validation_and_unknown_members_answer_kafka_errors_with_messages(ctx: ConsumerGroupContext) -> None:
    """Invalid requests and strangers get Kafka's errors and messages in the response; nothing is written."""
    bad = ctx.heartbeat(ConsumerGroupHeartbeatRequest(group_id="g", member_id="a", member_epoch=0,
                                                      subscribed_topic_names=("t",), topic_partitions={}))
    assert (bad.error, bad.error_message) == (Errors.INVALID_REQUEST,
                                              "RebalanceTimeoutMs must be provided in first request.")
    missing = ctx.beat("x", 3, {})
    assert (missing.error, missing.error_message) == (Errors.GROUP_ID_NOT_FOUND, "Consumer group g not found.")
    ctx.join("a")
    stranger = ctx.beat("x", 3, {})
    assert stranger.error == Errors.UNKNOWN_MEMBER_ID
    assert ctx.beat("a", 5, {}).error == Errors.FENCED_MEMBER_EPOCH
    assert ctx.join("b", assignor="nope").error == Errors.UNSUPPORTED_ASSIGNOR


def test_an_empty_classic_group_becomes_a_consumer_group_and_a_busy_one_upgrades_only_when_it_can(
        ctx: ConsumerGroupContext) -> None:
    """A classic group with only committed offsets converts on a consumer join (its offsets stay); one with members
    upgrades online only when its members' consumer protocol decodes (else GROUP_ID_NOT_FOUND with Kafka's message),
    and a heartbeat that does not join finds no consumer group, as in Kafka."""
    ctx.call(OffsetCommitRequest(group_id="simple", topics=(OffsetCommitTopic("t", (OffsetCommitPartition(0, 5),)),)))
    assert present(ctx.coordinator.group("simple")).state is GroupState.EMPTY
    answer = ctx.join("a", group="simple")
    assert answer.member_epoch == 1 and ctx.coordinator.group("simple") is None
    assert ("simple", "t", 0) in {(g, t, p) for g, t, p, _ in ctx.coordinator.hard_state().offsets}
    busy = ctx.call(JoinGroupRequest(group_id="classic", session_timeout_ms=10_000, protocol_type="consumer",
                                     protocols=(JoinGroupProtocol("range", b""),), require_known_member_id=False))
    assert present(ctx.coordinator.group("classic")).state is not GroupState.EMPTY and busy
    refused = ctx.join("c", group="classic")
    assert (refused.error, refused.error_message) == (
        Errors.GROUP_ID_NOT_FOUND,
        "Cannot upgrade classic group classic to consumer group because the embedded consumer protocol is malformed.")
    not_joining = ctx.beat("c", 3, group="classic")
    assert (not_joining.error, not_joining.error_message) == (Errors.GROUP_ID_NOT_FOUND,
                                                              "Group classic is not a consumer group.")


def test_a_classic_join_converts_an_empty_consumer_group_and_joins_one_with_members(
        ctx: ConsumerGroupContext) -> None:
    """JoinGroup to a consumer group with members joins it as a member of the classic protocol (the online
    migration; tests/coordinator/test_consumer_migration.py); once the group is empty, a join makes it a classic
    group again."""
    ctx.join("a")
    join = JoinGroupRequest(group_id="g", session_timeout_ms=10_000, protocol_type="consumer",
                            protocols=(JoinGroupProtocol("range", subscription("t")),), require_known_member_id=False)
    joined = ctx.response(ctx.call(join))
    assert isinstance(joined, JoinGroupResponse) and joined.error == Errors.NONE and joined.leader == ""
    assert present(ctx.coordinator.consumer_group("g")).members[joined.member_id].uses_classic_protocol
    ctx.call(LeaveGroupRequest(group_id="g", members=(MemberIdentity(joined.member_id),)))
    ctx.leave("a")
    ctx.call(dataclasses.replace(join, member_id=""))
    assert ctx.coordinator.consumer_group("g") is None and present(ctx.coordinator.group("g")) is not None


def test_a_topic_that_grows_moves_its_subscribers_to_a_new_epoch(ctx: ConsumerGroupContext) -> None:
    """A new partition count of a subscribed topic bumps the group epoch and the next target has the new
    partitions; a change to a topic nobody subscribes to changes nothing."""
    ctx.join("a")
    ctx.absorb(ctx.coordinator.on_metadata_change({"t": 4, "u": 3}, ctx.now, topic_ids={"t": T, "u": U}))
    assert present(ctx.coordinator.consumer_group("g")).group_epoch == 1
    ctx.absorb(ctx.coordinator.on_metadata_change({"t": 6, "u": 3}, ctx.now, topic_ids={"t": T, "u": U}))
    assert present(ctx.coordinator.consumer_group("g")).group_epoch == 2
    answer = ctx.beat("a", 1, parts(T, 0, 1, 2, 3))
    assert (answer.member_epoch, answer.assignment) == (2, parts(T, *range(6)))


def test_a_change_of_the_groups_preferred_server_assignor_bumps_the_epoch(ctx: ConsumerGroupContext) -> None:
    """As Kafka 4.4's ``hasPreferredServerAssignorChanged``: the assignor most members ask for picks the target's
    assignor; when it changes, the group moves to a new epoch and the next target uses it."""
    ctx.join("a", assignor="uniform")
    ctx.auto_assign = False
    ctx.absorb(ctx.coordinator.consumer_group_heartbeat(ConsumerGroupHeartbeatRequest(
        group_id="g", member_id="a", member_epoch=1, server_assignor="range", topic_partitions={T: range(4)}),
        ctx.now, 50))
    (effect,) = ctx.pending
    assert (effect.group_epoch, effect.assignor) == (2, "range")


def test_a_v0_join_without_member_id_is_given_one_and_a_full_group_refuses_newcomers() -> None:
    """ConsumerGroupHeartbeat v0 lets the coordinator make the member id (KIP-1082 moved that to the client at
    v1); a newcomer to a group at ``group.consumer.max.size`` is GROUP_MAX_SIZE_REACHED, a known member is not."""
    ctx = ConsumerGroupContext(InMemoryRecordLog(), config=dataclasses.replace(CONFIG, consumer_group_max_size=1))
    joined = ctx.heartbeat(ConsumerGroupHeartbeatRequest(
        group_id="g", member_epoch=0, api_version=0, client_id="c", rebalance_timeout_ms=REBALANCE_MS,
        subscribed_topic_names=("t",), topic_partitions={}))
    assert (joined.error, joined.member_id, joined.member_epoch) == (Errors.NONE, "c-1", 1)
    assert ctx.join("b").error == Errors.GROUP_MAX_SIZE_REACHED
    assert ctx.beat("c-1", 1, parts(T, 0, 1, 2, 3)).error == Errors.NONE
