"""Online migration between classic and consumer groups in the core (Kafka's ``group.consumer.migration.policy``):
a live classic group upgraded when a member rolls to the consumer protocol, its classic members rebalancing through
JoinGroup, SyncGroup and Heartbeat inside the consumer group, and the downgrade when the last consumer-protocol
member leaves. Each test is one of Kafka's steps, on the manual clock."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from uuid import UUID

import pytest

from groupcoord.coordinator import CoordinatorConfig
from groupcoord.coordinator.config import MigrationPolicy
from groupcoord.coordinator.consumer_records import ConsumerMemberMetadataRecord, CurrentAssignmentRecord
from groupcoord.group import GroupState
from groupcoord.group.consumer_member import MemberState
from groupcoord.log.memory import InMemoryRecordLog
from groupcoord.protocol import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    Errors,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupProtocol,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitTopic,
    SyncGroupRequest,
    SyncGroupResponse,
)
from groupcoord.protocol.consumer_protocol import (
    Assignment,
    Subscription,
    TopicPartitions,
    decode_assignment,
    encode_assignment,
    encode_subscription,
)
from groupcoord.protocol.requests import MemberIdentity, SyncGroupAssignment
from tests.narrowing import expect, present

from .consumer_context import CONFIG, REBALANCE_MS, ConsumerGroupContext, T, parts

CLASSIC_SESSION_MS = 10_000
MIGRATION_CONFIG = dataclasses.replace(CONFIG, initial_rebalance_delay_ms=0)


def context(config: CoordinatorConfig = MIGRATION_CONFIG) -> ConsumerGroupContext:
    """A coordinator whose shell answers every target at once, without an initial rebalance delay."""
    return ConsumerGroupContext(InMemoryRecordLog(), config=config)


@pytest.fixture
def ctx() -> ConsumerGroupContext:
    """The default context: migration policy ``bidirectional``, as Kafka's default."""
    return context()


def classic_join(ctx: ConsumerGroupContext, client: str, member_id: str = "", *,
                 owned: Mapping[str, Collection[int]] | None = None) -> int:
    """A classic consumer's JoinGroup (protocol ``range``, subscription v1 to ``t`` reporting ``owned``)."""
    metadata = encode_subscription(Subscription(version=1, topics=("t",), owned_partitions=tuple(
        TopicPartitions(topic, tuple(sorted(ids))) for topic, ids in (owned or {}).items())))
    return ctx.call(JoinGroupRequest(
        group_id="g", session_timeout_ms=CLASSIC_SESSION_MS, rebalance_timeout_ms=REBALANCE_MS, member_id=member_id,
        protocol_type="consumer", protocols=(JoinGroupProtocol("range", metadata),), client_id=client,
        require_known_member_id=False))


def joined(ctx: ConsumerGroupContext, token: int) -> JoinGroupResponse:
    """The answer to a JoinGroup, which must have come."""
    return expect(ctx.response(token), JoinGroupResponse)


def classic_sync(ctx: ConsumerGroupContext, member_id: str, generation: int,
                 assignments: Mapping[str, Mapping[str, Collection[int]]] | None = None) -> SyncGroupResponse:
    """A SyncGroup (the leader passes ``assignments`` by member id, partitions by topic name)."""
    entries = tuple(SyncGroupAssignment(m, encode_assignment(Assignment(version=1, partitions=tuple(
        TopicPartitions(t, tuple(sorted(p))) for t, p in by_topic.items()))))
        for m, by_topic in (assignments or {}).items())
    token = ctx.call(SyncGroupRequest(group_id="g", generation_id=generation, member_id=member_id,
                                      protocol_type="consumer", protocol_name="range", assignments=entries))
    return expect(ctx.response(token), SyncGroupResponse)


def classic_heartbeat(ctx: ConsumerGroupContext, member_id: str, generation: int) -> HeartbeatResponse:
    """A classic Heartbeat."""
    token = ctx.call(HeartbeatRequest(group_id="g", generation_id=generation, member_id=member_id))
    return expect(ctx.response(token), HeartbeatResponse)


def assigned(sync: SyncGroupResponse) -> dict[str, set[int]]:
    """The partitions a SyncGroup answer assigns, by topic name."""
    return {tp.topic: set(tp.partitions) for tp in decode_assignment(sync.assignment).partitions}


def classic_group_of_two(ctx: ConsumerGroupContext) -> tuple[str, str, int]:
    """A Stable classic group ``g``: members a (t-0, t-1, the leader) and b (t-2, t-3); returns their ids and the
    generation."""
    first = joined(ctx, classic_join(ctx, "a"))
    a = first.member_id
    classic_sync(ctx, a, first.generation_id, {a: {"t": [0, 1, 2, 3]}})
    b_token = classic_join(ctx, "b")
    assert classic_heartbeat(ctx, a, first.generation_id).error == Errors.REBALANCE_IN_PROGRESS
    a_join = joined(ctx, classic_join(ctx, "a", a))
    b_join = joined(ctx, b_token)
    b, generation = b_join.member_id, a_join.generation_id
    classic_sync(ctx, a, generation, {a: {"t": [0, 1]}, b: {"t": [2, 3]}})
    classic_sync(ctx, b, generation)
    assert present(ctx.coordinator.group("g")).state is GroupState.STABLE
    return a, b, generation


def owners(ctx: ConsumerGroupContext) -> dict[tuple[UUID, int], list[str]]:
    """Who holds each partition of the consumer group ``g`` now (assigned or pending revocation)."""
    held: dict[tuple[UUID, int], list[str]] = {}
    for member in present(ctx.coordinator.consumer_group("g")).members.values():
        for source in (member.assigned_partitions, member.partitions_pending_revocation):
            for topic_id, ids in source.items():
                for partition in ids:
                    held.setdefault((topic_id, partition), []).append(member.member_id)
    return held


def test_a_consumer_member_upgrades_a_live_classic_group(ctx: ConsumerGroupContext) -> None:
    """The first consumer-protocol member converts the Stable classic group: its members become classic members of
    a consumer group at the generation's epoch, keeping what they own, and the joiner bumps the group epoch."""
    a, b, generation = classic_group_of_two(ctx)
    answer = ctx.join("c")
    assert answer.error == Errors.NONE and answer.member_epoch == generation + 1
    assert ctx.coordinator.group("g") is None
    group = present(ctx.coordinator.consumer_group("g"))
    assert group.group_epoch == group.target_assignment_epoch == generation + 1
    member_a, member_b = group.members[a], group.members[b]
    assert member_a.member_epoch == member_b.member_epoch == generation
    assert member_a.uses_classic_protocol and present(member_a.classic).session_timeout_ms == CLASSIC_SESSION_MS
    assert dict(member_a.assigned_partitions) == parts(T, 0, 1) and dict(member_b.assigned_partitions) == parts(T, 2, 3)
    assert dict(answer.assignment or {}) == {}  # c's partitions are still held: it waits for their release
    assert all(len(held) == 1 for held in owners(ctx).values())
    described = expect(ctx.response(ctx.call(ConsumerGroupDescribeRequest(groups=("g",)))),
                       ConsumerGroupDescribeResponse)
    assert {m.member_id: m.uses_classic_protocol for m in described.groups[0].members} == {a: True, b: True,
                                                                                          "c": False}


def test_classic_members_rebalance_inside_the_consumer_group(ctx: ConsumerGroupContext) -> None:
    """Told by Heartbeat to rejoin, each classic member rejoins and syncs: the one that keeps its partitions moves
    to the new epoch at once; the one that gives one up gets its reduced assignment, rejoins once more after
    revoking, and only then does the consumer member get the partition. No partition ever has two owners."""
    a, b, generation = classic_group_of_two(ctx)
    c_epoch = ctx.join("c").member_epoch
    # uniform over a, b, c: a keeps t-0 and t-1, b keeps t-2 and gives up t-3, c gets t-3.
    assert classic_heartbeat(ctx, a, generation).error == Errors.REBALANCE_IN_PROGRESS
    a_join = joined(ctx, classic_join(ctx, "a", a))
    assert (a_join.generation_id, a_join.protocol_name, a_join.leader) == (c_epoch, "range", "")
    assert assigned(classic_sync(ctx, a, a_join.generation_id)) == {"t": {0, 1}}
    assert classic_heartbeat(ctx, a, a_join.generation_id).error == Errors.NONE
    assert classic_heartbeat(ctx, b, generation).error == Errors.REBALANCE_IN_PROGRESS
    b_join = joined(ctx, classic_join(ctx, "b", b, owned={"t": [2, 3]}))
    assert b_join.generation_id == generation  # b must revoke t-3 first
    assert present(ctx.coordinator.consumer_group("g")).members[b].state is MemberState.UNREVOKED_PARTITIONS
    assert assigned(classic_sync(ctx, b, generation)) == {"t": {2}}
    assert classic_heartbeat(ctx, b, generation).error == Errors.REBALANCE_IN_PROGRESS
    assert not ctx.beat("c", c_epoch, {}).assignment  # t-3 is still b's
    b_again = joined(ctx, classic_join(ctx, "b", b, owned={"t": [2]}))
    assert b_again.generation_id == c_epoch
    assert assigned(classic_sync(ctx, b, c_epoch)) == {"t": {2}}
    assert dict(present(ctx.beat("c", c_epoch, {}).assignment)) == parts(T, 3)
    assert all(len(held) == 1 for held in owners(ctx).values()) and len(owners(ctx)) == 4
    group = present(ctx.coordinator.consumer_group("g"))
    assert all(m.state is MemberState.STABLE and m.member_epoch == c_epoch for m in group.members.values())


def test_offsets_stay_through_the_upgrade_and_classic_members_commit_at_their_epoch(
        ctx: ConsumerGroupContext) -> None:
    """The classic group's offsets stay; a classic member commits at its epoch (any OffsetCommit version), and a
    newer generation is ILLEGAL_GENERATION."""
    a, _, generation = classic_group_of_two(ctx)
    commit = OffsetCommitRequest(group_id="g", generation_id=generation, member_id=a, api_version=8,
                                 topics=(OffsetCommitTopic("t", (OffsetCommitPartition(0, 42),)),))
    ctx.call(commit)
    ctx.join("c")
    assert ("g", "t", 0) in {(g, t, p) for g, t, p, _ in ctx.coordinator.hard_state().offsets}
    accepted = expect(ctx.response(ctx.call(dataclasses.replace(commit, topics=(
        OffsetCommitTopic("t", (OffsetCommitPartition(1, 7),)),)))), OffsetCommitResponse)
    assert all(p.error == Errors.NONE for t in accepted.topics for p in t.partitions)
    refused = expect(ctx.response(ctx.call(dataclasses.replace(commit, generation_id=generation + 5))),
                     OffsetCommitResponse)
    assert {p.error for t in refused.topics for p in t.partitions} == {Errors.ILLEGAL_GENERATION}


@pytest.mark.parametrize("policy", [MigrationPolicy.DISABLED, MigrationPolicy.DOWNGRADE])
def test_the_upgrade_is_refused_when_the_policy_does_not_allow_it(policy: MigrationPolicy) -> None:
    """With ``group.consumer.migration.policy`` disabled or downgrade only, the classic group stays and the
    consumer-protocol member gets Kafka's GROUP_ID_NOT_FOUND."""
    ctx = context(dataclasses.replace(MIGRATION_CONFIG, consumer_group_migration_policy=policy))
    classic_group_of_two(ctx)
    refused = ctx.join("c")
    assert (refused.error, refused.error_message) == (
        Errors.GROUP_ID_NOT_FOUND,
        "Cannot upgrade classic group g to consumer group because online upgrade is disabled.")
    assert present(ctx.coordinator.group("g")).state is GroupState.STABLE


def test_a_custom_assignors_user_data_refuses_the_upgrade(ctx: ConsumerGroupContext) -> None:
    """An assignment carrying user data (a custom assignor's) would be lost: the upgrade is refused."""
    first = joined(ctx, classic_join(ctx, "a"))
    with_user_data = encode_assignment(Assignment(version=1, partitions=(TopicPartitions("t", (0, 1, 2, 3)),),
                                                  user_data=b"custom"))
    ctx.call(SyncGroupRequest(group_id="g", generation_id=first.generation_id, member_id=first.member_id,
                              protocol_type="consumer", protocol_name="range",
                              assignments=(SyncGroupAssignment(first.member_id, with_user_data),)))
    refused = ctx.join("c")
    assert refused.error == Errors.GROUP_ID_NOT_FOUND and "unsupported custom assignor" in (refused.error_message or "")
    assert present(ctx.coordinator.group("g")).state is GroupState.STABLE


def test_the_last_consumer_member_leaving_downgrades_the_group(ctx: ConsumerGroupContext) -> None:
    """When the consumer-protocol member leaves and only classic members remain, the group is a classic group again,
    Stable at the group epoch with each member's partitions, then rebalancing; the members rejoin the classic way."""
    a, b, generation = classic_group_of_two(ctx)
    ctx.join("c")
    ctx.leave("c")
    assert ctx.coordinator.consumer_group("g") is None
    group = present(ctx.coordinator.group("g"))
    assert group.state is GroupState.PREPARING_REBALANCE and set(group.members) == {a, b}
    assert classic_heartbeat(ctx, a, group.generation_id).error == Errors.REBALANCE_IN_PROGRESS
    a_token, b_token = classic_join(ctx, "a", a), classic_join(ctx, "b", b)
    a_join, b_join = joined(ctx, a_token), joined(ctx, b_token)
    assert a_join.generation_id == b_join.generation_id > generation
    assert present(ctx.coordinator.group("g")).state is GroupState.COMPLETING_REBALANCE


def test_an_upgrade_only_policy_keeps_the_consumer_group(ctx: ConsumerGroupContext) -> None:
    """With policy ``upgrade`` the consumer group stays when the consumer member leaves; the classic members go on
    in it."""
    ctx = context(dataclasses.replace(MIGRATION_CONFIG, consumer_group_migration_policy=MigrationPolicy.UPGRADE))
    a, b, _ = classic_group_of_two(ctx)
    ctx.join("c")
    ctx.leave("c")
    assert ctx.coordinator.group("g") is None
    assert set(present(ctx.coordinator.consumer_group("g")).members) == {a, b}


def test_a_classic_member_is_fenced_when_its_own_session_runs_out(ctx: ConsumerGroupContext) -> None:
    """A classic member's session is its own JoinGroup's timeout, not the consumer group's."""
    a, b, generation = classic_group_of_two(ctx)
    epoch = ctx.join("c").member_epoch
    for _ in range(3):
        ctx.sleep(CLASSIC_SESSION_MS // 2)
        assert classic_heartbeat(ctx, a, generation).error in (Errors.NONE, Errors.REBALANCE_IN_PROGRESS)
        ctx.beat("c", epoch, {})
    group = present(ctx.coordinator.consumer_group("g"))
    assert a in group.members and b not in group.members


def test_a_classic_leave_removes_the_member_and_can_downgrade(ctx: ConsumerGroupContext) -> None:
    """LeaveGroup removes classic members from the consumer group; a consumer-protocol member named there is
    UNKNOWN_MEMBER_ID. Once the consumer member left too, the leaves of the rest leave a classic group."""
    a, b, _ = classic_group_of_two(ctx)
    ctx.join("c")
    token = ctx.call(LeaveGroupRequest(group_id="g", members=(MemberIdentity(a), MemberIdentity("c"))))
    answer = expect(ctx.response(token), LeaveGroupResponse)
    assert [m.error for m in answer.members] == [Errors.NONE, Errors.UNKNOWN_MEMBER_ID]
    assert set(present(ctx.coordinator.consumer_group("g")).members) == {b, "c"}


def test_the_upgraded_group_replays_with_its_classic_members(ctx: ConsumerGroupContext) -> None:
    """The classic members' metadata (session timeout, protocols) is in the member records, so a coordinator that
    loads the log serves them as classic members."""
    a, _, generation = classic_group_of_two(ctx)
    ctx.join("c")
    assert any(isinstance(r, ConsumerMemberMetadataRecord) and r.value is not None and r.value.classic is not None
               for r in ctx.records)
    assert any(isinstance(r, CurrentAssignmentRecord) for r in ctx.records)
    fresh = ctx.reloaded()
    member = present(fresh.coordinator.consumer_group("g")).members[a]
    assert member.uses_classic_protocol and present(member.classic).protocols[0].name == "range"
    assert classic_heartbeat(fresh, a, generation).error == Errors.REBALANCE_IN_PROGRESS


def test_a_refused_join_leaves_the_classic_group_as_it_was(ctx: ConsumerGroupContext) -> None:
    """A joining member that would be refused anyway (a regex RE2 cannot compile) converts nothing."""
    classic_group_of_two(ctx)
    refused = ctx.heartbeat(ConsumerGroupHeartbeatRequest(
        group_id="g", member_id="c", member_epoch=0, rebalance_timeout_ms=REBALANCE_MS, subscribed_topic_regex="t(",
        topic_partitions={}))
    assert refused.error == Errors.INVALID_REGULAR_EXPRESSION
    assert present(ctx.coordinator.group("g")).state is GroupState.STABLE
    assert ctx.coordinator.consumer_group("g") is None


def test_a_classic_static_member_rolls_to_the_consumer_protocol_under_its_instance_id(
        ctx: ConsumerGroupContext) -> None:
    """A static classic member restarted with ``group.protocol=consumer`` and the same ``group.instance.id`` takes
    its own place at once (no UNRELEASED_INSTANCE_ID: a classic holder never leaves with epoch -2) and keeps its
    partitions."""
    metadata = encode_subscription(Subscription(version=1, topics=("t",)))
    token = ctx.call(JoinGroupRequest(
        group_id="g", session_timeout_ms=CLASSIC_SESSION_MS, rebalance_timeout_ms=REBALANCE_MS,
        group_instance_id="i1", protocol_type="consumer", protocols=(JoinGroupProtocol("range", metadata),),
        client_id="s"))
    first = joined(ctx, token)
    classic_sync(ctx, first.member_id, first.generation_id, {first.member_id: {"t": [0, 1, 2, 3]}})
    rolled = ctx.join("s-consumer", instance_id="i1")
    assert rolled.error == Errors.NONE
    group = present(ctx.coordinator.consumer_group("g"))
    assert set(group.members) == {"s-consumer"} and not group.members["s-consumer"].uses_classic_protocol
    assert dict(present(rolled.assignment)) == parts(T, 0, 1, 2, 3)


def test_a_classic_static_member_replacing_the_last_consumer_member_downgrades_at_once(
        ctx: ConsumerGroupContext) -> None:
    """As Kafka 4.4 answers it: the static consumer-protocol member's instance comes back classic; the group becomes
    a classic group at once, Stable at the group epoch, the newcomer holding the replaced member's share of the
    target and the other classic member its own (stale: it learns of it at its next rebalance)."""
    a, b, generation = classic_group_of_two(ctx)
    ctx.join("s", instance_id="i1")
    group = present(ctx.coordinator.consumer_group("g"))
    epoch, target_of_s = group.group_epoch, dict(group.target_assignment_of("s"))
    metadata = encode_subscription(Subscription(version=1, topics=("t",)))
    answer = joined(ctx, ctx.call(JoinGroupRequest(
        group_id="g", session_timeout_ms=CLASSIC_SESSION_MS, rebalance_timeout_ms=REBALANCE_MS,
        group_instance_id="i1", protocol_type="consumer", protocols=(JoinGroupProtocol("range", metadata),),
        client_id="s")))
    assert (answer.error, answer.generation_id, answer.leader) == (Errors.NONE, epoch, "")
    assert ctx.coordinator.consumer_group("g") is None
    classic = present(ctx.coordinator.group("g"))
    assert classic.state is GroupState.STABLE and classic.generation_id == epoch
    assert set(classic.members) == {a, b, answer.member_id}
    sync = classic_sync(ctx, answer.member_id, epoch)
    assert {T: frozenset(assigned(sync).get("t", set()))} == (target_of_s or {T: frozenset()})
    assert classic_heartbeat(ctx, a, epoch).error == Errors.NONE
    assert generation < epoch


def test_a_classic_member_that_does_not_rejoin_within_its_rebalance_timeout_is_fenced(
        ctx: ConsumerGroupContext) -> None:
    """Told to rejoin (REBALANCE_IN_PROGRESS), a classic member must rejoin within its rebalance timeout, however
    often it heartbeats; then it is fenced and its partitions go to the others."""
    a, b, generation = classic_group_of_two(ctx)
    epoch = ctx.join("c").member_epoch
    assert classic_heartbeat(ctx, a, generation).error == Errors.REBALANCE_IN_PROGRESS
    b_join = joined(ctx, classic_join(ctx, "b", b))
    classic_sync(ctx, b, b_join.generation_id)
    for _ in range(REBALANCE_MS // 5000):
        ctx.sleep(5000)
        classic_heartbeat(ctx, a, generation)
        classic_heartbeat(ctx, b, b_join.generation_id)
        ctx.beat("c", epoch, {})
    assert a not in present(ctx.coordinator.consumer_group("g")).members


def test_a_classic_member_that_does_not_sync_after_its_join_is_fenced(ctx: ConsumerGroupContext) -> None:
    """After its JoinGroup a classic member must sync within its rebalance timeout, however often it heartbeats."""
    a, b, generation = classic_group_of_two(ctx)
    epoch = ctx.join("c").member_epoch
    a_join = joined(ctx, classic_join(ctx, "a", a))
    for _ in range(REBALANCE_MS // 5000 - 1):
        ctx.sleep(5000)
        assert classic_heartbeat(ctx, a, a_join.generation_id).error == Errors.NONE
        classic_heartbeat(ctx, b, generation)
        ctx.beat("c", epoch, {})
    assert a in present(ctx.coordinator.consumer_group("g")).members
    ctx.sleep(5000)
    assert a not in present(ctx.coordinator.consumer_group("g")).members
