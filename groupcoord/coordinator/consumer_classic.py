"""Members of the classic protocol in a consumer group (KIP-848's online migration): JoinGroup, SyncGroup, Heartbeat
and LeaveGroup sent to a consumer group with members, as Kafka 4.4's ``classicGroup*ToConsumerGroup`` answer them.

A classic member is a consumer-group member with :class:`~groupcoord.group.consumer_member.ClassicMemberMetadata`
(its session timeout and protocols). The coordinator computes its assignment, as for every member:

- **JoinGroup** creates or updates the member from the subscription its first protocol carries (a new dynamic member
  of JoinGroup v4+ first gets MEMBER_ID_REQUIRED), bumps the group epoch when its subscription changed, waits for
  the target assignment of the group epoch when the group is Assigning, and reconciles the member against it with
  the partitions its subscription reports owned. The answer names the member's epoch as the generation, protocol type
  ``consumer``, the member's first protocol, no leader and no members: every classic member is a follower.
- **SyncGroup** hands the member the partitions it owns now, as a ConsumerProtocol assignment; REBALANCE_IN_PROGRESS
  when the target moved past its epoch and it has nothing to revoke.
- **Heartbeat** answers REBALANCE_IN_PROGRESS when the member must rejoin: the target moved past its epoch, it must
  revoke partitions, or the partitions it waits for are free now.
- **LeaveGroup** removes the members named (members of the classic protocol only), with one new group epoch.

A new member gets a member id in Kafka's form for this case, a bare uuid (``kafka_uuid_member_id``). A static member
whose instance id is held by the last member of the consumer protocol replaces it and turns the group into a classic
group at once (Kafka's downgrade "with stale assignment").

A member must rejoin within its rebalance timeout once told to, and sync within it after a join; else it is fenced,
as is a member whose session (its own timeout) runs out. When the last member of the consumer protocol leaves, the
group may become a classic group again (:mod:`groupcoord.coordinator.consumer_migration`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from uuid import UUID

from groupcoord.coordinator.consumer_epochs import (
    member_or_raise,
    throw_if_group_full,
    throw_if_instance_id_fenced,
    throw_if_static_member_unknown,
)
from groupcoord.coordinator.consumer_membership import (
    bump_group_epoch,
    cancel_member_timers,
    fence_member,
    fence_members,
    park,
    replace_static_member,
    request_target,
    schedule_session_timeout,
    subscribed_topic_ids,
    target_is_coming,
)
from groupcoord.coordinator.consumer_migration import (
    classic_assignment,
    downgrade_allowed,
    downgrade_to_classic_group,
    partitions_by_id,
)
from groupcoord.coordinator.consumer_reconciliation import maybe_reconcile
from groupcoord.coordinator.consumer_records import new_current_assignment_record, new_member_metadata_record
from groupcoord.coordinator.context import (
    CoordinatorContext,
    ParkedClassicJoin,
    consumer_join_key,
    consumer_sync_key,
    kafka_uuid_member_id,
)
from groupcoord.coordinator.validation import (
    throw_if_invalid_group_id,
    throw_if_invalid_instance_id,
    throw_if_invalid_session_timeout,
)
from groupcoord.group.consumer_group import ConsumerGroup
from groupcoord.group.consumer_member import ClassicMemberMetadata, ConsumerGroupMember, MemberState
from groupcoord.group.member import Token
from groupcoord.protocol.consumer_protocol import PROTOCOL_TYPE as CONSUMER_PROTOCOL_TYPE
from groupcoord.protocol.consumer_protocol import ConsumerProtocolError, Subscription, decode_subscription
from groupcoord.protocol.errors import ErrorCode, Errors, ProtocolError
from groupcoord.protocol.requests import (
    UNKNOWN_MEMBER_ID,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    SyncGroupRequest,
)
from groupcoord.protocol.responses import (
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupMemberResponse,
    LeaveGroupResponse,
    SyncGroupResponse,
)

# --- checks ------------------------------------------------------------------------------------------------------

def throw_if_classic_member_cannot_join(ctx: CoordinatorContext, group: ConsumerGroup) -> None:
    """INCONSISTENT_GROUP_PROTOCOL when the migration policy is ``disabled``."""
    if not (ctx.config.consumer_group_migration_policy.upgrade_enabled
            or ctx.config.consumer_group_migration_policy.downgrade_enabled):
        raise ProtocolError(
            Errors.INCONSISTENT_GROUP_PROTOCOL,
            f"Cannot join the consumer group {group.group_id} with the classic protocol because the group migration "
            "is disabled.")


def supports_classic_protocols(group: ConsumerGroup, protocol_type: str, protocol_names: list[str]) -> bool:
    """Whether a classic member offering these protocols may join: protocol type ``consumer``, and one protocol
    every classic member of the group supports (any, when it has none; Kafka's ``supportsClassicProtocols``)."""
    if protocol_type != CONSUMER_PROTOCOL_TYPE:
        return False
    classic = [m.classic for m in group.members.values() if m.classic is not None]
    if not group.members:
        return bool(protocol_names)
    return any(all(name in {p.name for p in c.protocols} for c in classic) for name in protocol_names)


def _classic_member(group: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerGroupMember:
    """The member a classic request speaks for (Kafka's ``validateConsumerGroupMember`` and
    ``throwIfMemberDoesNotUseClassicProtocol``)."""
    if instance_id is None:
        member = member_or_raise(group, member_id)
    else:
        member = throw_if_static_member_unknown(group.static_member(instance_id), instance_id)
        throw_if_instance_id_fenced(member, member_id, instance_id)
    if not member.uses_classic_protocol:
        raise ProtocolError(Errors.UNKNOWN_MEMBER_ID, f"Member {member.member_id} does not use the classic protocol.")
    return member


def _throw_if_generation_unmatched(member: ConsumerGroupMember, generation_id: int) -> None:
    if generation_id != member.member_epoch:
        raise ProtocolError(
            Errors.ILLEGAL_GENERATION,
            f"The request generation id {generation_id} is not equal to the member epoch {member.member_epoch} of "
            f"member {member.member_id}.")


# --- timers ------------------------------------------------------------------------------------------------------

def _schedule_join_timeout_if_absent(ctx: CoordinatorContext, group_id: str, member: ConsumerGroupMember,
                                     now_ms: int) -> None:
    key = consumer_join_key(group_id, member.member_id)
    if ctx.timers.deadline(key) is None:
        ctx.timers.schedule(key, now_ms + max(member.rebalance_timeout_ms, 0),
                            lambda at: _fence_if_present(ctx, group_id, member.member_id, at))


def _schedule_sync_timeout(ctx: CoordinatorContext, group_id: str, member: ConsumerGroupMember, now_ms: int) -> None:
    ctx.timers.schedule(consumer_sync_key(group_id, member.member_id), now_ms + max(member.rebalance_timeout_ms, 0),
                        lambda at: _fence_if_present(ctx, group_id, member.member_id, at))


def _fence_if_present(ctx: CoordinatorContext, group_id: str, member_id: str, now_ms: int) -> None:
    group = ctx.hard.consumer_group(group_id)
    if group is not None and group.has_member(member_id):
        fence_member(ctx, group, member_id, now_ms)


# --- JoinGroup ---------------------------------------------------------------------------------------------------

def handle_classic_join(ctx: CoordinatorContext, group: ConsumerGroup, request: JoinGroupRequest, now_ms: int,
                        token: Token) -> None:
    """A classic JoinGroup to a consumer group with members (Kafka's ``classicGroupJoinToConsumerGroup``)."""
    throw_if_invalid_group_id(request.group_id)
    throw_if_invalid_session_timeout(ctx.config, request.session_timeout_ms)
    throw_if_invalid_instance_id(request.group_instance_id)
    throw_if_classic_member_cannot_join(ctx, group)
    instance_id = request.group_instance_id
    is_unknown = request.member_id == UNKNOWN_MEMBER_ID
    member_id = kafka_uuid_member_id() if is_unknown else request.member_id
    throw_if_group_full(group, member_id, instance_id, ctx.config.consumer_group_max_size)
    if not supports_classic_protocols(group, request.protocol_type, [p.name for p in request.protocols]):
        raise ProtocolError(Errors.INCONSISTENT_GROUP_PROTOCOL,
                            f"Member {member_id} protocol type or protocols are not supported by the group.")
    if is_unknown and instance_id is None and request.require_known_member_id:
        ctx.respond(token, JoinGroupResponse(error=Errors.MEMBER_ID_REQUIRED, member_id=member_id))
        return
    try:
        subscription = decode_subscription(request.protocols[0].metadata)
    except ConsumerProtocolError:
        raise ProtocolError(Errors.INCONSISTENT_GROUP_PROTOCOL,
                            f"Member {member_id} sent a malformed consumer protocol subscription.") from None
    holder = None if instance_id is None or not is_unknown else group.static_member(instance_id)
    if holder is not None and not holder.uses_classic_protocol and downgrade_allowed(
            ctx, group, frozenset({holder.member_id}), replaced_by_classic=True):
        _downgrade_by_replacement(ctx, group, holder, member_id, request, subscription, token, now_ms)
        return
    member = _joining_member(ctx, group, member_id, instance_id, is_unknown)
    updated = _updated_member(member, request, subscription)
    subscription_changed = (updated.subscribed_topic_names != member.subscribed_topic_names
                            or updated.subscribed_topic_regex != member.subscribed_topic_regex
                            or not group.has_member(member_id))
    if updated != member or not group.has_member(member_id):
        ctx.append(new_member_metadata_record(group.group_id, updated))
    if subscription_changed:
        bump_group_epoch(ctx, group.group_id, f"classic member {member_id} joined or changed its subscription")
    ctx.timers.cancel(consumer_join_key(group.group_id, member_id))
    owned = partitions_by_id(ctx, subscription.owned_partitions)
    parked = ParkedClassicJoin(
        token, member_id,
        answer=lambda at: _reconcile_and_answer_join(ctx, request.group_id, member_id, owned, token, at),
        fail=lambda error, _message: ctx.respond(token, JoinGroupResponse(error=error)))
    current = ctx.hard.consumer_group(group.group_id)
    assert current is not None
    if current.group_epoch > current.target_assignment_epoch:
        request_target(ctx, group.group_id)
        if target_is_coming(ctx, current):
            park(ctx, group.group_id, parked)
            return
    _reconcile_and_answer_join(ctx, group.group_id, member_id, owned, token, now_ms)


def _downgrade_by_replacement(ctx: CoordinatorContext, group: ConsumerGroup, holder: ConsumerGroupMember,
                              member_id: str, request: JoinGroupRequest, subscription: Subscription, token: Token,
                              now_ms: int) -> None:
    """A classic static member replaces the last member of the consumer protocol under its instance id: the group
    becomes a classic group at once, Stable at the group epoch, the newcomer taking the replaced member's share of
    the target (Kafka's "downgrade ... with stale assignment"), and a rebalance only when the newcomer subscribes to
    other topics; the JoinGroup is answered with that generation, as a follower."""
    joining = _updated_member(holder.rejoined_as(member_id), request, subscription)
    for existing in list(group.members):
        cancel_member_timers(ctx, group.group_id, existing)
    classic = downgrade_to_classic_group(
        ctx, group, frozenset({holder.member_id}), now_ms, joining=(joining, holder.member_id),
        rebalance_now=joining.subscribed_topic_names != holder.subscribed_topic_names)
    assert joining.classic is not None
    ctx.respond(token, JoinGroupResponse(
        error=Errors.NONE, generation_id=classic.generation_id, protocol_type=CONSUMER_PROTOCOL_TYPE,
        protocol_name=joining.classic.protocol_name, leader="", member_id=member_id))


def _joining_member(ctx: CoordinatorContext, group: ConsumerGroup, member_id: str, instance_id: str | None,
                    is_unknown: bool) -> ConsumerGroupMember:
    """The member a classic JoinGroup speaks for: created when new (any member id, as Kafka's
    ``getOrMaybeCreateMember``), a static member's new incarnation taking over its instance, or the known one."""
    if instance_id is None:
        return group.member(member_id) or ConsumerGroupMember(member_id=member_id)
    holder = group.static_member(instance_id)
    if is_unknown:
        if holder is None:
            return group.member(member_id) or ConsumerGroupMember(member_id=member_id)
        replacement = holder.rejoined_as(member_id)
        replace_static_member(ctx, group, holder, replacement)
        return replacement
    static = throw_if_static_member_unknown(holder, instance_id)
    throw_if_instance_id_fenced(static, member_id, instance_id)
    return static


def _updated_member(member: ConsumerGroupMember, request: JoinGroupRequest,
                    subscription: Subscription) -> ConsumerGroupMember:
    """``member`` with what the JoinGroup carries (Kafka's builder calls in ``classicGroupJoinToConsumerGroup``)."""
    return replace(
        member,
        instance_id=request.group_instance_id if request.group_instance_id is not None else member.instance_id,
        rack_id=subscription.rack_id if subscription.rack_id else member.rack_id,
        rebalance_timeout_ms=(member.rebalance_timeout_ms if request.rebalance_timeout_ms == -1
                              else request.rebalance_timeout_ms),
        subscribed_topic_names=frozenset(subscription.topics), subscribed_topic_regex="",
        client_id=request.client_id, client_host=request.client_host,
        classic=ClassicMemberMetadata(session_timeout_ms=request.session_timeout_ms, protocols=request.protocols))


def _reconcile_and_answer_join(ctx: CoordinatorContext, group_id: str, member_id: str,
                               owned: Mapping[UUID, set[int]], token: Token, now_ms: int) -> None:
    """Reconcile the joined member against the group's target and answer its JoinGroup; then its session and its
    deadline to sync start."""
    group = ctx.hard.consumer_group(group_id)
    member = None if group is None else group.member(member_id)
    if group is None or member is None or member.classic is None:
        ctx.respond(token, JoinGroupResponse(error=Errors.UNKNOWN_MEMBER_ID))
        return
    reconciliation = maybe_reconcile(
        member, target_epoch=group.target_assignment_epoch, target=group.target_assignment_of(member_id),
        owned=owned, current_partition_epoch=group.current_partition_epoch,
        subscribed_topic_ids=subscribed_topic_ids(ctx, member))
    final = reconciliation.member
    if reconciliation.changed:
        ctx.append(new_current_assignment_record(group_id, final))
    assert final.classic is not None
    ctx.respond(token, JoinGroupResponse(
        error=Errors.NONE, generation_id=final.member_epoch, protocol_type=CONSUMER_PROTOCOL_TYPE,
        protocol_name=final.classic.protocol_name, leader="", member_id=member_id))
    schedule_session_timeout(ctx, group_id, member_id, now_ms)
    _schedule_sync_timeout(ctx, group_id, final, now_ms)


# --- SyncGroup, Heartbeat, LeaveGroup ----------------------------------------------------------------------------

def handle_classic_sync(ctx: CoordinatorContext, group: ConsumerGroup, request: SyncGroupRequest, now_ms: int,
                        token: Token) -> None:
    """A classic SyncGroup to a consumer group (Kafka's ``classicGroupSyncToConsumerGroup``)."""
    member = _classic_member(group, request.member_id, request.group_instance_id)
    _throw_if_generation_unmatched(member, request.generation_id)
    _throw_if_protocol_unmatched(member, request.protocol_type, request.protocol_name)
    if group.target_assignment_epoch > member.member_epoch and member.state is not MemberState.UNREVOKED_PARTITIONS:
        _schedule_join_timeout_if_absent(ctx, group.group_id, member, now_ms)
        raise ProtocolError(Errors.REBALANCE_IN_PROGRESS,
                            f"A new rebalance is triggered in group {group.group_id} and member {member.member_id} "
                            "should rejoin to catch up.")
    ctx.timers.cancel(consumer_sync_key(group.group_id, member.member_id))
    schedule_session_timeout(ctx, group.group_id, member.member_id, now_ms)
    ctx.respond(token, SyncGroupResponse(error=Errors.NONE, protocol_type=request.protocol_type,
                                         protocol_name=request.protocol_name,
                                         assignment=classic_assignment(ctx, member)))


def _throw_if_protocol_unmatched(member: ConsumerGroupMember, protocol_type: str | None,
                                 protocol_name: str | None) -> None:
    assert member.classic is not None
    if protocol_type is not None and protocol_type != CONSUMER_PROTOCOL_TYPE:
        raise ProtocolError(Errors.INCONSISTENT_GROUP_PROTOCOL,
                            f"The protocol type {protocol_type} from member {member.member_id} request is not equal "
                            f"to the group protocol type {CONSUMER_PROTOCOL_TYPE}.")
    if protocol_name is not None and protocol_name != member.classic.protocol_name:
        raise ProtocolError(Errors.INCONSISTENT_GROUP_PROTOCOL,
                            f"The protocol name {protocol_name} from member {member.member_id} request is not equal "
                            f"to the protocol name {member.classic.protocol_name} returned in the join response.")


def handle_classic_heartbeat(ctx: CoordinatorContext, group: ConsumerGroup, request: HeartbeatRequest, now_ms: int,
                             token: Token) -> None:
    """A classic Heartbeat to a consumer group (Kafka's ``classicGroupHeartbeatToConsumerGroup``)."""
    member = _classic_member(group, request.member_id, request.group_instance_id)
    _throw_if_generation_unmatched(member, request.generation_id)
    schedule_session_timeout(ctx, group.group_id, member.member_id, now_ms)
    error: ErrorCode = Errors.NONE
    if (member.member_epoch < group.target_assignment_epoch
            or member.state is MemberState.UNREVOKED_PARTITIONS
            or (member.state is MemberState.UNRELEASED_PARTITIONS and not _waits_on_unreleased(group, member))):
        error = Errors.REBALANCE_IN_PROGRESS
        _schedule_join_timeout_if_absent(ctx, group.group_id, member, now_ms)
    ctx.respond(token, HeartbeatResponse(error=error))


def _waits_on_unreleased(group: ConsumerGroup, member: ConsumerGroupMember) -> bool:
    """True while a partition of the member's target, not yet assigned to it, is still held by another member."""
    assigned = member.assigned_partitions
    for topic_id, partitions in group.target_assignment_of(member.member_id).items():
        for partition in partitions:
            if partition not in assigned.get(topic_id, frozenset()) and \
                    group.current_partition_epoch(topic_id, partition) != -1:
                return True
    return False


def handle_classic_leave(ctx: CoordinatorContext, group: ConsumerGroup, request: LeaveGroupRequest, now_ms: int,
                         token: Token) -> None:
    """A classic LeaveGroup to a consumer group (Kafka's ``classicGroupLeaveToConsumerGroup``): each named member of
    the classic protocol leaves; the others get their error."""
    answers: list[LeaveGroupMemberResponse] = []
    leaving: list[str] = []
    for identity in request.members:
        try:
            if identity.group_instance_id is None:
                member = _classic_member(group, identity.member_id, None)
            else:
                member = throw_if_static_member_unknown(group.static_member(identity.group_instance_id),
                                                        identity.group_instance_id)
                if identity.member_id != UNKNOWN_MEMBER_ID:
                    throw_if_instance_id_fenced(member, identity.member_id, identity.group_instance_id)
                member = _classic_member(group, member.member_id, None)
        except ProtocolError as exc:
            answers.append(LeaveGroupMemberResponse(identity.member_id, identity.group_instance_id, exc.error))
            continue
        if member.member_id not in leaving:
            leaving.append(member.member_id)
        answers.append(LeaveGroupMemberResponse(identity.member_id, identity.group_instance_id, Errors.NONE))
    fence_members(ctx, group, leaving, now_ms)
    ctx.respond(token, LeaveGroupResponse(error=Errors.NONE, members=tuple(answers)))
