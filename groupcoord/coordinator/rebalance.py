"""The rebalance machinery every handler shares: starting and completing the join phase, removing members,
session and sync timers, persisting a generation's assignment (Kafka's ``GroupCoordinator`` internals)."""

from __future__ import annotations

import logging

from groupcoord.coordinator.context import CoordinatorContext, heartbeat_key, join_key, sync_key
from groupcoord.coordinator.effects import AssignmentMember, NeedsAssignment
from groupcoord.coordinator.overdue import watch_phase
from groupcoord.coordinator.records import new_group_metadata_record
from groupcoord.group.group import SERVER_ASSIGNOR_PREFIX, ClassicGroup, is_server_side
from groupcoord.group.member import Member
from groupcoord.group.state import GroupState
from groupcoord.protocol.consumer_protocol import (
    PROTOCOL_TYPE as CONSUMER_PROTOCOL_TYPE,
)
from groupcoord.protocol.consumer_protocol import (
    ConsumerProtocolError,
    TopicPartitions,
    decode_assignment,
    decode_subscription,
)
from groupcoord.protocol.errors import ErrorCode, Errors
from groupcoord.protocol.responses import JoinGroupResponse, SyncGroupResponse

log = logging.getLogger("groupcoord.coordinator.rebalance")

_S = GroupState


# --- sessions ---------------------------------------------------------------------------------------------------------
def schedule_session(ctx: CoordinatorContext, group: ClassicGroup, member_id: str, now_ms: int,
                     timeout_ms: int) -> None:
    """(Re)start the session timer of ``member_id``: it expires ``timeout_ms`` after ``now_ms``."""
    group_id = group.group_id
    ctx.timers.schedule(heartbeat_key(group_id, member_id), now_ms + timeout_ms,
                        lambda at: on_session_expired(ctx, group_id, member_id, at))


def heartbeat(ctx: CoordinatorContext, group: ClassicGroup, member: Member, now_ms: int) -> None:
    """Record a sign of life from ``member`` (heartbeat, sync, accepted commit)."""
    schedule_session(ctx, group, member.member_id, now_ms, member.session_timeout_ms)


def on_session_expired(ctx: CoordinatorContext, group_id: str, member_id: str, now_ms: int) -> None:
    """A session ran out. Members with a parked JoinGroup or SyncGroup are exempt (seed 000, "Heartbeats during
    rebalance"), except brand-new members, whose parked JoinGroup itself times out."""
    group = ctx.groups.get(group_id)
    if group is None or group.is_in(_S.DEAD):
        return
    if group.is_pending_member(member_id):
        log.info("group %s: pending member %s did not join in time", group_id, member_id)
        remove_pending_member(ctx, group, member_id, now_ms)
        return
    member = group.members.get(member_id)
    if member is None:
        return
    if not member.is_new and (member.is_awaiting_join or member.is_awaiting_sync):
        return
    log.info("group %s: member %s session expired", group_id, member_id)
    remove_member_and_update_group(ctx, group, member, now_ms)


def remove_pending_member(ctx: CoordinatorContext, group: ClassicGroup, member_id: str, now_ms: int) -> None:
    """Forget a member id handed out with MEMBER_ID_REQUIRED."""
    group.pending_members.pop(member_id, None)
    ctx.timers.cancel(heartbeat_key(group.group_id, member_id))
    if group.is_in(_S.PREPARING_REBALANCE):
        try_complete_join(ctx, group, now_ms)


def remove_member_and_update_group(ctx: CoordinatorContext, group: ClassicGroup, member: Member,
                                   now_ms: int) -> None:
    """Remove ``member`` (answering its parked requests with UNKNOWN_MEMBER_ID) and rebalance the rest."""
    group.remove(member.member_id)
    answer_parked(ctx, member, Errors.UNKNOWN_MEMBER_ID)
    ctx.timers.cancel(heartbeat_key(group.group_id, member.member_id))
    if group.is_in(_S.STABLE, _S.COMPLETING_REBALANCE):
        maybe_prepare_rebalance(ctx, group, now_ms, f"member {member.member_id} left")
    elif group.is_in(_S.PREPARING_REBALANCE):
        try_complete_join(ctx, group, now_ms)


def answer_parked(ctx: CoordinatorContext, member: Member, error: ErrorCode) -> None:
    """Answer every parked JoinGroup and SyncGroup of ``member`` with ``error``.

    ``member`` is no longer in its group (removed, or the fenced half of a static replacement), so its parked
    JoinGroups are not in the group's tally.
    """
    member_id = member.member_id if error == Errors.FENCED_INSTANCE_ID else ""
    for token in member.join_tokens:
        ctx.respond(token, JoinGroupResponse(error=error, member_id=member_id))
    for token in member.sync_tokens:
        ctx.respond(token, SyncGroupResponse(error=error))
    member.join_tokens = []
    member.sync_tokens = []


# --- join phase -------------------------------------------------------------------------------------------------------
def maybe_prepare_rebalance(ctx: CoordinatorContext, group: ClassicGroup, now_ms: int, reason: str) -> None:
    """Start a rebalance if the group's state allows one."""
    if group.can_rebalance:
        prepare_rebalance(ctx, group, now_ms, reason)


def prepare_rebalance(ctx: CoordinatorContext, group: ClassicGroup, now_ms: int, reason: str) -> None:
    """Enter PreparingRebalance: cancel a sync in progress and start the join phase's timer.

    Leaving Empty waits ``group.initial.rebalance.delay.ms`` first, extended while new members keep arriving
    and capped by the rebalance timeout; otherwise the join phase lasts at most the group's rebalance timeout.
    """
    log.info("group %s: preparing rebalance (%s)", group.group_id, reason)
    if group.is_in(_S.COMPLETING_REBALANCE):
        reset_and_propagate_assignment_error(ctx, group, Errors.REBALANCE_IN_PROGRESS, now_ms)
    ctx.timers.cancel(sync_key(group.group_id))
    from_empty = group.is_in(_S.EMPTY)
    if not group.is_in(_S.COMPLETING_REBALANCE):  # a rebalance restarted from its sync phase goes on
        group.rebalance_started_ms = now_ms
    group.transition_to(_S.PREPARING_REBALANCE, now_ms)
    watch_phase(ctx, group, now_ms)
    initial_delay = ctx.config.initial_rebalance_delay_ms
    if from_empty and initial_delay > 0:
        group.in_initial_delay = True
        group.new_member_added = False
        _schedule_initial_delay(ctx, group, now_ms, initial_delay,
                                max(group.rebalance_timeout_ms - initial_delay, 0))
    else:
        group.in_initial_delay = False
        schedule_join_timeout(ctx, group, now_ms)
        try_complete_join(ctx, group, now_ms)


def schedule_join_timeout(ctx: CoordinatorContext, group: ClassicGroup, now_ms: int) -> None:
    """The join phase completes, joined or not, after the group's rebalance timeout."""
    group_id = group.group_id
    ctx.timers.schedule(join_key(group_id), now_ms + group.rebalance_timeout_ms,
                        lambda at: _on_join_timeout(ctx, group_id, at))


def _on_join_timeout(ctx: CoordinatorContext, group_id: str, now_ms: int) -> None:
    group = ctx.groups.get(group_id)
    if group is not None and group.is_in(_S.PREPARING_REBALANCE):
        complete_join(ctx, group, now_ms)


def _schedule_initial_delay(ctx: CoordinatorContext, group: ClassicGroup, now_ms: int, delay_ms: int,
                            remaining_ms: int) -> None:
    group_id = group.group_id
    ctx.timers.schedule(join_key(group_id), now_ms + delay_ms,
                        lambda at: _on_initial_delay(ctx, group_id, remaining_ms, at))


def _on_initial_delay(ctx: CoordinatorContext, group_id: str, remaining_ms: int, now_ms: int) -> None:
    group = ctx.groups.get(group_id)
    if group is None or not group.is_in(_S.PREPARING_REBALANCE):
        return
    delay = ctx.config.initial_rebalance_delay_ms
    if group.new_member_added and remaining_ms > 0:
        group.new_member_added = False
        _schedule_initial_delay(ctx, group, now_ms, min(delay, remaining_ms), max(remaining_ms - delay, 0))
        return
    group.in_initial_delay = False
    complete_join(ctx, group, now_ms)


def try_complete_join(ctx: CoordinatorContext, group: ClassicGroup, now_ms: int) -> None:
    """Complete the join phase early when every member has rejoined (never during the initial delay)."""
    if group.is_in(_S.PREPARING_REBALANCE) and not group.in_initial_delay and group.has_all_members_joined():
        complete_join(ctx, group, now_ms)


def complete_join(ctx: CoordinatorContext, group: ClassicGroup, now_ms: int) -> None:
    """End the join phase: drop dynamic members that did not rejoin, pick a leader, start the next generation,
    and answer every parked JoinGroup (Kafka's ``onCompleteJoin``)."""
    ctx.timers.cancel(join_key(group.group_id))
    for member in group.not_yet_rejoined():
        if not member.is_static:
            log.info("group %s: member %s did not rejoin in time", group.group_id, member.member_id)
            group.remove(member.member_id)
            ctx.timers.cancel(heartbeat_key(group.group_id, member.member_id))
    if group.members and not group.maybe_elect_new_joined_leader():
        # Only static members that did not rejoin are left: wait another rebalance timeout for them.
        schedule_join_timeout(ctx, group, now_ms)
        return
    group.init_next_generation(now_ms)
    if group.is_in(_S.EMPTY):
        ctx.append(new_group_metadata_record(group.group_id, group.to_metadata_value()))
        return
    server_side = is_server_side(group.protocol_name)
    for member in group.members.values():
        response = join_response(group, member)
        for token in group.take_join_tokens(member):
            ctx.respond(token, response)
        member.is_new = False
        heartbeat(ctx, group, member, now_ms)
        group.pending_sync_members.add(member.member_id)
    _schedule_pending_sync(ctx, group, now_ms)
    watch_phase(ctx, group, now_ms)
    if server_side:
        ctx.emit(needs_assignment(group))


def join_response(group: ClassicGroup, member: Member, *, skip_assignment: bool = False) -> JoinGroupResponse:
    """The JoinGroup answer for ``member`` in the current generation; only the leader gets the member list.

    A ``server-<assignor>`` group names no leader (an empty leader id): the coordinator assigns it and watches its
    topics, so no member has a leader's work to do. A member told it leads would run its assignor anyway (clients
    before JoinGroup v9's SkipAssignment, such as kafka-python 3.0) and rejoin when its topic metadata arrives after
    that, a rejoin kafka-python can strand (docs/compatibility.md).
    """
    if is_server_side(group.protocol_name):
        return JoinGroupResponse(
            error=Errors.NONE, generation_id=group.generation_id, protocol_type=group.protocol_type,
            protocol_name=group.protocol_name, leader="", member_id=member.member_id, members=())
    return JoinGroupResponse(
        error=Errors.NONE, generation_id=group.generation_id, protocol_type=group.protocol_type,
        protocol_name=group.protocol_name, leader=group.leader_id or "", skip_assignment=skip_assignment,
        member_id=member.member_id,
        members=group.current_member_metadata() if group.is_leader(member.member_id) else ())


def follower_join_response(group: ClassicGroup, member: Member, *, leader: str) -> JoinGroupResponse:
    """The JoinGroup answer of the current generation naming ``leader`` and no members: ``member`` syncs as a
    follower whatever its id (a ``server-*`` group names no leader, see :func:`join_response`)."""
    return JoinGroupResponse(
        error=Errors.NONE, generation_id=group.generation_id, protocol_type=group.protocol_type,
        protocol_name=group.protocol_name, leader="" if is_server_side(group.protocol_name) else leader,
        member_id=member.member_id, members=())


# --- sync phase -------------------------------------------------------------------------------------------------------
def _schedule_pending_sync(ctx: CoordinatorContext, group: ClassicGroup, now_ms: int) -> None:
    group_id, generation = group.group_id, group.generation_id
    ctx.timers.schedule(sync_key(group_id), now_ms + group.rebalance_timeout_ms,
                        lambda at: _on_pending_sync_expired(ctx, group_id, generation, at))


def _on_pending_sync_expired(ctx: CoordinatorContext, group_id: str, generation: int, now_ms: int) -> None:
    group = ctx.groups.get(group_id)
    if group is None or group.generation_id != generation:
        return
    if not group.is_in(_S.COMPLETING_REBALANCE, _S.STABLE) or not group.pending_sync_members:
        return
    late = [m for m in group.members.values() if m.member_id in group.pending_sync_members]
    log.info("group %s: members %s did not sync in time", group_id, [m.member_id for m in late])
    for member in late:
        group.remove(member.member_id)
        answer_parked(ctx, member, Errors.UNKNOWN_MEMBER_ID)
        ctx.timers.cancel(heartbeat_key(group_id, member.member_id))
    group.pending_sync_members.clear()
    maybe_prepare_rebalance(ctx, group, now_ms, "members did not sync in time")


def mark_synced(ctx: CoordinatorContext, group: ClassicGroup, member_id: str) -> None:
    """``member_id`` sent SyncGroup; once everybody has, the pending-sync timer is no longer needed."""
    group.pending_sync_members.discard(member_id)
    if not group.pending_sync_members:
        ctx.timers.cancel(sync_key(group.group_id))


def persist_assignment(ctx: CoordinatorContext, group: ClassicGroup, assignments: dict[str, bytes],
                       now_ms: int) -> None:
    """Make ``assignments`` the generation's assignment: go Stable, persist, then answer parked SyncGroups.

    The responses leave in the same result as the record, so the shell sends them only once it is durable.
    """
    for member in group.members.values():
        member.assignment = assignments.get(member.member_id, b"")
    group.transition_to(_S.STABLE, now_ms)
    ctx.append(new_group_metadata_record(group.group_id, group.to_metadata_value()))
    for member in group.members.values():
        if member.sync_tokens:
            response = SyncGroupResponse(error=Errors.NONE, protocol_type=group.protocol_type,
                                         protocol_name=group.protocol_name, assignment=member.assignment)
            for token in member.sync_tokens:
                ctx.respond(token, response)
            member.sync_tokens = []
            heartbeat(ctx, group, member, now_ms)


def reset_and_propagate_assignment_error(ctx: CoordinatorContext, group: ClassicGroup, error: ErrorCode,
                                         now_ms: int) -> None:
    """Clear the generation's assignment and answer every parked SyncGroup with ``error``."""
    for member in group.members.values():
        member.assignment = b""
        if member.sync_tokens:
            for token in member.sync_tokens:
                ctx.respond(token, SyncGroupResponse(error=error))
            member.sync_tokens = []
            heartbeat(ctx, group, member, now_ms)


# --- server-side assignment -------------------------------------------------------------------------------------------
def needs_assignment(group: ClassicGroup) -> NeedsAssignment:
    """The effect asking the shell to assign a ``server-<assignor>`` group's new generation."""
    assert group.protocol_name is not None
    members = []
    for member in group.members.values():
        metadata = member.metadata(group.protocol_name)
        topics: tuple[str, ...] | None = None
        owned: tuple[TopicPartitions, ...] = ()
        if group.protocol_type == CONSUMER_PROTOCOL_TYPE:
            try:
                subscription = decode_subscription(metadata)
                topics = subscription.topics
                # Only a v0 subscription has no owned field: then the stored assignment stands in. A v1+ member
                # that lists nothing owns nothing (its last SyncGroup may never have reached it).
                owned = (subscription.owned_partitions if subscription.version >= 1
                         else decode_assignment(member.assignment).partitions)
            except ConsumerProtocolError:
                log.warning("group %s: member %s sent undecodable metadata", group.group_id, member.member_id)
        members.append(AssignmentMember(member_id=member.member_id, group_instance_id=member.group_instance_id,
                                        topics=topics, owned=owned, metadata=metadata))
    return NeedsAssignment(group_id=group.group_id, generation_id=group.generation_id,
                           protocol_name=group.protocol_name,
                           assignor=group.protocol_name[len(SERVER_ASSIGNOR_PREFIX):], members=tuple(members))
