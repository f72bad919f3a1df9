"""ConsumerGroupHeartbeat (API key 68, KIP-848): join, heartbeat, leave (epoch -1) and a static member's
temporary leave (epoch -2), as Kafka 4.4's ``GroupMetadataManager.consumerGroupHeartbeat`` and
``consumerGroupLeave`` do them, in their order:

1. validate the request (:func:`~groupcoord.coordinator.consumer_epochs.throw_if_invalid_heartbeat`); a classic
   group of that id converts to a consumer group when the heartbeat joins (an empty one at once, one with members
   by the online upgrade of :mod:`~groupcoord.coordinator.consumer_migration`), else it is GROUP_ID_NOT_FOUND;
2. a leave fences the member (or keeps a static member at epoch -2 with its assignment) and answers at once;
3. otherwise find the member (:func:`~groupcoord.coordinator.consumer_epochs.heartbeat_member`: joining, known,
   or a static member's new incarnation that replaces the old one), write its metadata when it changed, and bump
   the group epoch when it is new, its subscription changed, or the group's preferred server assignor changed;
4. restart its session; if the group is Assigning, wait for the target (parked); else reconcile and answer
   (:func:`~groupcoord.coordinator.consumer_membership.reconcile_and_respond`).

Topic-name subscriptions only: a member's ``subscribed_topic_regex`` is kept and persisted but not resolved yet.
"""

from __future__ import annotations

from groupcoord.coordinator.consumer_epochs import (
    LeaveKind,
    heartbeat_member,
    leave,
    throw_if_consumer_group_not_found,
    throw_if_group_full,
    throw_if_invalid_heartbeat,
)
from groupcoord.coordinator.consumer_membership import (
    bump_group_epoch,
    fence_member,
    park,
    reconcile_and_respond,
    replace_static_member,
    request_target,
    schedule_session_timeout,
    target_is_coming,
)
from groupcoord.coordinator.consumer_migration import upgrade_classic_group
from groupcoord.coordinator.consumer_records import (
    new_current_assignment_record,
    new_member_metadata_record,
)
from groupcoord.coordinator.consumer_topics import compiled_regex
from groupcoord.coordinator.context import CoordinatorContext, ParkedHeartbeat, consumer_rebalance_key
from groupcoord.coordinator.records import new_group_tombstone
from groupcoord.group.consumer_group import ConsumerGroup
from groupcoord.group.consumer_member import ConsumerGroupMember, MemberState
from groupcoord.group.member import Token
from groupcoord.group.state import GroupState
from groupcoord.protocol.errors import Errors, ProtocolError
from groupcoord.protocol.requests import JOIN_GROUP_MEMBER_EPOCH, ConsumerGroupHeartbeatRequest
from groupcoord.protocol.responses import ConsumerGroupHeartbeatResponse


def handle_consumer_heartbeat(ctx: CoordinatorContext, request: ConsumerGroupHeartbeatRequest, now_ms: int,
                              token: Token) -> None:
    """Handle one ConsumerGroupHeartbeat; its answer may wait for the group's target assignment."""
    throw_if_invalid_heartbeat(request, supported_assignors=ctx.config.consumer_group_assignors)
    if ctx.partition_counts is None:
        # Without topic metadata every subscription would resolve to nothing and members would be told to revoke
        # everything: a coordinator that just loaded waits for its first snapshot of the catalog.
        raise ProtocolError(Errors.COORDINATOR_LOAD_IN_PROGRESS, "The coordinator has no topic metadata yet.")
    group_id = request.group_id
    _maybe_convert_classic_group(ctx, request, now_ms)
    existing = ctx.hard.consumer_group(group_id)
    throw_if_consumer_group_not_found(existing, group_id, request.member_epoch)
    view = existing if existing is not None else ConsumerGroup(group_id)
    if request.is_leave:
        _leave(ctx, view, request, now_ms, token)
        return

    member_id = request.member_id or ctx.new_member_id(request.instance_id or request.client_id)
    throw_if_group_full(view, member_id, request.instance_id, ctx.config.consumer_group_max_size)
    found = heartbeat_member(view, member_id=member_id, member_epoch=request.member_epoch,
                             instance_id=request.instance_id, owned=request.topic_partitions)
    if found.replaced is not None:
        replace_static_member(ctx, view, found.replaced, found.member)
    member = found.member
    throw_if_unknown_state(member, request)
    regex = request.subscribed_topic_regex
    if regex and regex != member.subscribed_topic_regex:
        compiled_regex(regex)  # INVALID_REGULAR_EXPRESSION before anything is written, as in Kafka
    updated = member.updated_from_heartbeat(
        instance_id=request.instance_id, rack_id=request.rack_id, rebalance_timeout_ms=request.rebalance_timeout_ms,
        subscribed_topic_names=request.subscribed_topic_names, subscribed_topic_regex=request.subscribed_topic_regex,
        server_assignor_name=request.server_assignor, client_id=request.client_id, client_host=request.client_host)
    subscription_changed = (updated.subscribed_topic_names != member.subscribed_topic_names
                            or updated.subscribed_topic_regex != member.subscribed_topic_regex)
    assignor_before = view.preferred_server_assignor()
    if found.is_new or updated != member:
        ctx.append(new_member_metadata_record(group_id, updated))
    after = ctx.hard.consumer_group(group_id)
    assignor_changed = after is not None and after.preferred_server_assignor() != assignor_before
    if subscription_changed or assignor_changed or (found.is_new and found.replaced is None):
        bump_group_epoch(ctx, group_id, f"member {member_id} joined" if found.is_new
                         else f"member {member_id} changed its subscription or server assignor")
    schedule_session_timeout(ctx, group_id, member_id, now_ms)

    group = ctx.hard.consumer_group(group_id)
    assert group is not None, "the heartbeat's records created the group"
    heartbeat = ParkedHeartbeat(token, request, member_id, member, subscription_changed)
    if group.group_epoch > group.target_assignment_epoch:
        request_target(ctx, group_id)
        if target_is_coming(ctx, group):
            park(ctx, group_id, heartbeat)
            return
        group = ctx.hard.consumer_group(group_id)
        assert group is not None
    reconcile_and_respond(ctx, group, heartbeat, now_ms)


def throw_if_unknown_state(member: ConsumerGroupMember, request: ConsumerGroupHeartbeatRequest) -> None:
    """FENCED_MEMBER_EPOCH for a member in a state a newer coordinator wrote unless it reports owning nothing,
    checked before anything is written (reconciliation would refuse it after the member's records)."""
    owned = request.topic_partitions
    if member.state is MemberState.UNKNOWN and (owned is None or owned):
        raise ProtocolError(Errors.FENCED_MEMBER_EPOCH, "The consumer group member is in a unknown state. "
                                                        "The member must abandon all its partitions and rejoin.")


def _leave(ctx: CoordinatorContext, group: ConsumerGroup, request: ConsumerGroupHeartbeatRequest, now_ms: int,
           token: Token) -> None:
    """Epoch -1 fences the member; epoch -2 keeps a static member, at epoch -2, with its assignment (its session
    keeps running: it is fenced if it does not come back in time)."""
    decision = leave(group, member_id=request.member_id, member_epoch=request.member_epoch,
                     instance_id=request.instance_id)
    if decision.kind is LeaveKind.TEMPORARY:
        ctx.append(new_current_assignment_record(group.group_id, decision.member))
        ctx.timers.cancel(consumer_rebalance_key(group.group_id, decision.member.member_id))
    else:
        fence_member(ctx, group, decision.member.member_id, now_ms)
    ctx.respond(token, ConsumerGroupHeartbeatResponse(
        error=Errors.NONE, member_id=decision.response_member_id, member_epoch=decision.response_member_epoch))


def _maybe_convert_classic_group(ctx: CoordinatorContext, request: ConsumerGroupHeartbeatRequest, now_ms: int) -> None:
    """A classic group of ``group_id`` becomes a consumer group when a member joins: an empty one is dropped (its
    offsets stay), one with members is upgraded online when ``group.consumer.migration.policy`` allows it
    (:func:`~groupcoord.coordinator.consumer_migration.upgrade_classic_group`). A heartbeat that does not join
    finds no consumer group."""
    group_id = request.group_id
    classic = ctx.groups.get(group_id)
    if classic is None or classic.is_in(GroupState.DEAD):
        return
    if request.member_epoch != JOIN_GROUP_MEMBER_EPOCH:
        raise ProtocolError(Errors.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
    # Kafka writes a conversion only with the heartbeat's own records: what would refuse the joining member
    # afterwards refuses it first here, so that a refused join leaves the classic group as it was.
    if request.subscribed_topic_regex:
        compiled_regex(request.subscribed_topic_regex)
    max_size = ctx.config.consumer_group_max_size
    if classic.size >= max_size and classic.current_static_member_id(request.instance_id) is None:
        raise ProtocolError(Errors.GROUP_MAX_SIZE_REACHED,
                            f"The consumer group has reached its maximum capacity of {max_size} members.")
    if classic.is_in(GroupState.EMPTY):
        if ctx.hard.group(group_id) is not None:
            ctx.append(new_group_tombstone(group_id))
        classic.transition_to(GroupState.DEAD, now_ms)
        ctx.forget_group(classic)
        return
    for member_id in upgrade_classic_group(ctx, classic, now_ms):
        schedule_session_timeout(ctx, group_id, member_id, now_ms)
