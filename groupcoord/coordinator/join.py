"""JoinGroup (Kafka's ``handleJoinGroup``): new members, known members, static members (KIP-345), KIP-394.

Checks run in Kafka's order: session-timeout bounds, group size, then for a new member its protocol type and
protocols, then MEMBER_ID_REQUIRED. A response is parked until the join phase completes.

Without server-side assignment (``CoordinatorConfig.server_side_assignment`` off) ``server-*`` protocols are not
eligible: they are dropped from the request before anything else looks at it, so protocol selection only sees the
client-side ones, and a member offering nothing else is refused with INCONSISTENT_GROUP_PROTOCOL before the group is
touched (rather than being accepted and then failed at every SyncGroup).
"""

from __future__ import annotations

import logging
from dataclasses import replace

from groupcoord.coordinator import rebalance
from groupcoord.coordinator.context import CoordinatorContext, heartbeat_key
from groupcoord.coordinator.coverage import leaves_partitions_unowned
from groupcoord.coordinator.records import new_group_metadata_record
from groupcoord.coordinator.validation import (
    throw_if_dead,
    throw_if_invalid_group_id,
    throw_if_invalid_instance_id,
    throw_if_invalid_session_timeout,
)
from groupcoord.group.group import ClassicGroup, is_server_side
from groupcoord.group.member import Member, Token
from groupcoord.group.state import GroupState
from groupcoord.protocol.consumer_protocol import PROTOCOL_TYPE as CONSUMER_PROTOCOL_TYPE
from groupcoord.protocol.consumer_protocol import subscribed_topics
from groupcoord.protocol.errors import Errors, ProtocolError
from groupcoord.protocol.requests import UNKNOWN_MEMBER_ID, JoinGroupRequest
from groupcoord.protocol.responses import JoinGroupResponse

_S = GroupState

log = logging.getLogger("groupcoord.coordinator.join")


def handle_join(ctx: CoordinatorContext, request: JoinGroupRequest, now_ms: int, token: Token) -> None:
    """Handle one JoinGroup; its response is queued now or when the join phase completes."""
    throw_if_invalid_group_id(request.group_id)
    throw_if_invalid_session_timeout(ctx.config, request.session_timeout_ms)
    if request.rebalance_timeout_ms < -1:
        raise ProtocolError(Errors.INVALID_REQUEST, f"negative rebalance timeout {request.rebalance_timeout_ms}")
    throw_if_invalid_instance_id(request.group_instance_id)
    request = _eligible_protocols(ctx, request)
    is_new = request.member_id == UNKNOWN_MEMBER_ID
    group = ctx.groups.get(request.group_id)
    if group is None:
        if not is_new:
            raise ProtocolError(Errors.UNKNOWN_MEMBER_ID, f"group {request.group_id} does not exist")
        group = ClassicGroup(request.group_id, now_ms=now_ms)
    throw_if_dead(group)
    if not _accept_joining_member(ctx, group, request.member_id):
        existing = group.members.get(request.member_id)
        if existing is not None:
            rebalance.remove_member_and_update_group(ctx, group, existing, now_ms)
        raise ProtocolError(Errors.GROUP_MAX_SIZE_REACHED, f"group {group.group_id} is full")
    if is_new:
        _join_new_member(ctx, group, request, now_ms, token)
    else:
        _join_current_member(ctx, group, request, now_ms, token)
    if group.is_in(_S.PREPARING_REBALANCE):
        rebalance.try_complete_join(ctx, group, now_ms)


def _eligible_protocols(ctx: CoordinatorContext, request: JoinGroupRequest) -> JoinGroupRequest:
    """``request`` without the ``server-*`` protocols when nobody can run a server-side assignor; refuses a member
    left with no protocol at all."""
    if ctx.config.server_side_assignment:
        return request
    eligible = tuple(p for p in request.protocols if not is_server_side(p.name))
    if len(eligible) == len(request.protocols):
        return request
    if not eligible:
        log.warning("refusing JoinGroup of %r to group %s: protocols %s need server-side assignment, which this "
                    "coordinator does not run (no Spark)", request.member_id or request.client_id, request.group_id,
                    [p.name for p in request.protocols])
        raise ProtocolError(Errors.INCONSISTENT_GROUP_PROTOCOL,
                            f"group {request.group_id}: server-side assignment is off and the member offers no "
                            "client-side protocol")
    return replace(request, protocols=eligible)


def _accept_joining_member(ctx: CoordinatorContext, group: ClassicGroup, member_id: str) -> bool:
    max_size = ctx.config.group_max_size
    if group.is_in(_S.EMPTY, _S.DEAD):
        return True
    if group.is_in(_S.PREPARING_REBALANCE):
        # Counting members that already rejoined (not the group size) lets a shrunk limit push out the last ones.
        member = group.members.get(member_id)
        return (member is not None and member.is_awaiting_join) or group.num_awaiting_join < max_size
    return group.has(member_id) or group.size < max_size


def _rebalance_timeout(request: JoinGroupRequest) -> int:
    return request.session_timeout_ms if request.rebalance_timeout_ms == -1 else request.rebalance_timeout_ms


def _join_new_member(ctx: CoordinatorContext, group: ClassicGroup, request: JoinGroupRequest, now_ms: int,
                     token: Token) -> None:
    names = [p.name for p in request.protocols]
    if len(set(names)) != len(names):
        raise ProtocolError(Errors.INCONSISTENT_GROUP_PROTOCOL, "a protocol is listed twice")
    if not group.supports_protocols(request.protocol_type, names):
        raise ProtocolError(Errors.INCONSISTENT_GROUP_PROTOCOL,
                            f"protocol type {request.protocol_type!r} / {names} do not fit group {group.group_id}")
    ctx.register_group(group)
    member_id = ctx.new_member_id(request.group_instance_id or request.client_id)
    instance_id = request.group_instance_id
    if instance_id is not None:
        old_member_id = group.current_static_member_id(instance_id)
        if old_member_id is not None:
            _replace_static_member(ctx, group, instance_id, old_member_id, member_id, request, now_ms, token)
        else:
            _add_member_and_rebalance(ctx, group, member_id, request, now_ms, token)
        return
    if not request.require_known_member_id:
        # JoinGroup v0-v3 cannot express MEMBER_ID_REQUIRED: the member joins at once, as in Kafka.
        _add_member_and_rebalance(ctx, group, member_id, request, now_ms, token)
        return
    # KIP-394: hand out the id first; the member joins for real with it. Unused ids expire with the session.
    group.add_pending_member(member_id)
    rebalance.schedule_session(ctx, group, member_id, now_ms, request.session_timeout_ms)
    ctx.respond(token, JoinGroupResponse(error=Errors.MEMBER_ID_REQUIRED, member_id=member_id))


def _add_member_and_rebalance(ctx: CoordinatorContext, group: ClassicGroup, member_id: str,
                              request: JoinGroupRequest, now_ms: int, token: Token) -> None:
    member = Member(member_id=member_id, group_instance_id=request.group_instance_id, client_id=request.client_id,
                    client_host=request.client_host, rebalance_timeout_ms=_rebalance_timeout(request),
                    session_timeout_ms=request.session_timeout_ms, protocol_type=request.protocol_type,
                    protocols=request.protocols, is_new=True, join_tokens=[token])
    if group.is_in(_S.PREPARING_REBALANCE) and group.in_initial_delay:
        group.new_member_added = True
    group.add(member)
    # A new member cannot heartbeat while its JoinGroup is parked, so that JoinGroup itself times out.
    rebalance.schedule_session(ctx, group, member_id, now_ms, ctx.config.new_member_join_timeout_ms)
    rebalance.maybe_prepare_rebalance(ctx, group, now_ms, f"new member {member_id} joined")


def _replace_static_member(ctx: CoordinatorContext, group: ClassicGroup, instance_id: str, old_member_id: str,
                           new_member_id: str, request: JoinGroupRequest, now_ms: int, token: Token) -> None:
    """KIP-345: a known instance rejoins with a new member id; the old id is fenced."""
    leader_before = group.leader_id
    old = group.replace_static_member(instance_id, old_member_id, new_member_id)
    ctx.timers.cancel(heartbeat_key(group.group_id, old_member_id))
    rebalance.answer_parked(ctx, old, Errors.FENCED_INSTANCE_ID)
    member = group.get(new_member_id)
    topics_before = _member_topics(group, member)
    _update_member(group, member, request, token)
    rebalance.heartbeat(ctx, group, member, now_ms)
    if group.is_in(_S.STABLE):
        if _withholds_partitions(ctx, group):
            rebalance.prepare_rebalance(ctx, group, now_ms, f"static member {instance_id} rejoined while the group's "
                                        "assignment leaves partitions unowned")
        elif _keeps_the_generation(group, topics_before, _member_topics(group, member)):
            # No rebalance. Persist the new member id (and metadata), then answer with the current generation.
            ctx.append(new_group_metadata_record(group.group_id, group.to_metadata_value()))
            if request.supports_skip_assignment:
                response = rebalance.join_response(group, member, skip_assignment=group.is_leader(new_member_id))
            else:
                # Before v9 a restarted leader cannot be told to skip the assignment: like Kafka, name the leader
                # as it was before the restart (the old member id) and send no members, so the member acts as a
                # follower and keeps its assignment.
                response = rebalance.follower_join_response(group, member, leader=leader_before or "")
            for parked in group.take_join_tokens(member):
                ctx.respond(parked, response)
        else:
            rebalance.prepare_rebalance(ctx, group, now_ms, f"static member {instance_id} rejoined with another "
                                        "subscription or a change of the group's protocol")
    elif group.is_in(_S.COMPLETING_REBALANCE):
        # The assignment being computed names the old member id: start over.
        rebalance.prepare_rebalance(ctx, group, now_ms, f"static member {instance_id} rejoined during sync")


def _withholds_partitions(ctx: CoordinatorContext, group: ClassicGroup) -> bool:
    """Whether the Stable group's assignment leaves partitions of its topics unowned, so that a static member's
    restart must rebalance. A cooperative assignor withholds a partition that moves for one round, and the member
    that gives it up rejoins to start the next; a static member restarted before it rejoined comes back with nothing
    to revoke, takes its assignment back under Kafka's rule, and nobody else rejoins: the partition stayed unowned
    (simulator seed 87994 of the 100,000-schedule campaign at ae5651a; Kafka 4.4 keeps it unowned until some other
    rebalance, a kept difference in docs/compatibility.md)."""
    return ctx.partition_counts is not None and leaves_partitions_unowned(group, ctx.partition_counts)


def _keeps_the_generation(group: ClassicGroup, topics_before: frozenset[str] | None,
                          topics_now: frozenset[str] | None) -> bool:
    """Whether a static member that rejoined a Stable group (its protocols already updated) keeps the generation.

    Kafka's rule: no rebalance unless the protocol the group would select changes; other changes of its metadata
    (a Java consumer's restart drops the owned partitions it reported) are stored without one. groupcoord also
    rebalances when the member's own subscribed topics changed (``topics_before`` -> ``topics_now``), in every
    consumer-protocol group: a kept difference from Kafka (docs/compatibility.md, issue 26). Kafka hands the old
    assignment back; a member back with *more* topics accepts it, since it fits the subscription, and the new topics
    stay unowned until some other rebalance (Kafka's Java consumer does the same as a restarted leader told to skip
    the assignment, KIP-814). A member back with fewer or other topics refuses it (``ConsumerCoordinator
    .onJoinComplete``) and rejoins, which rebalances one round trip later anyway. In a ``server-*`` group, which the
    coordinator assigns, a follower whose metadata is already stored would otherwise refuse and rejoin without end.
    """
    if group.select_protocol() != group.protocol_name:
        return False
    return topics_before == topics_now


def _member_topics(group: ClassicGroup, member: Member) -> frozenset[str] | None:
    """The topics ``member`` subscribes to under the group's selected protocol (``None`` when it does not offer
    that protocol or its metadata is not a consumer subscription)."""
    if group.protocol_name is None or group.protocol_type != CONSUMER_PROTOCOL_TYPE:
        return None
    try:
        return subscribed_topics(member.metadata(group.protocol_name))
    except KeyError:
        return None


def _update_member(group: ClassicGroup, member: Member, request: JoinGroupRequest, token: Token) -> None:
    group.update_protocols(member, request.protocols)
    member.rebalance_timeout_ms = _rebalance_timeout(request)
    member.session_timeout_ms = request.session_timeout_ms
    group.park_join(member, token)


def _join_current_member(ctx: CoordinatorContext, group: ClassicGroup, request: JoinGroupRequest, now_ms: int,
                         token: Token) -> None:
    member_id = request.member_id
    if group.is_pending_member(member_id):
        _join_pending_member(ctx, group, request, now_ms, token)
        return
    instance_id = request.group_instance_id
    if group.is_static_member_fenced(instance_id, member_id):
        raise ProtocolError(Errors.FENCED_INSTANCE_ID, f"instance {instance_id} belongs to another member")
    if not group.has(member_id) or (instance_id is not None and group.current_static_member_id(instance_id) is None):
        raise ProtocolError(Errors.UNKNOWN_MEMBER_ID, f"member {member_id!r} is not in group {group.group_id}")
    if group.is_in(_S.EMPTY, _S.DEAD):
        raise ProtocolError(Errors.UNKNOWN_MEMBER_ID, f"group {group.group_id} is {group.state.value}")
    names = [p.name for p in request.protocols]
    if len(set(names)) != len(names) or not group.supports_protocols(request.protocol_type, names,
                                                                     excluding=member_id):
        raise ProtocolError(Errors.INCONSISTENT_GROUP_PROTOCOL, f"member {member_id} has incompatible protocols")
    member = group.get(member_id)
    if group.is_in(_S.PREPARING_REBALANCE):
        _update_member_and_rebalance(ctx, group, member, request, now_ms, token)
    elif group.is_in(_S.COMPLETING_REBALANCE):
        if member.matches(request.protocols):
            # It probably lost the JoinGroup response: answer again for the current generation.
            ctx.respond(token, rebalance.join_response(group, member))
        else:
            _update_member_and_rebalance(ctx, group, member, request, now_ms, token)
    elif group.is_leader(member_id) or not member.matches(request.protocols):
        # Stable: the leader rejoins to force a rebalance; a follower with new metadata needs one.
        _update_member_and_rebalance(ctx, group, member, request, now_ms, token)
    else:
        ctx.respond(token, rebalance.join_response(group, member))


def _join_pending_member(ctx: CoordinatorContext, group: ClassicGroup, request: JoinGroupRequest, now_ms: int,
                         token: Token) -> None:
    names = [p.name for p in request.protocols]
    if len(set(names)) != len(names) or not group.supports_protocols(request.protocol_type, names):
        raise ProtocolError(Errors.INCONSISTENT_GROUP_PROTOCOL, "protocols do not fit the group")
    _add_member_and_rebalance(ctx, group, request.member_id, request, now_ms, token)


def _update_member_and_rebalance(ctx: CoordinatorContext, group: ClassicGroup, member: Member,
                                 request: JoinGroupRequest, now_ms: int, token: Token) -> None:
    _update_member(group, member, request, token)
    rebalance.maybe_prepare_rebalance(ctx, group, now_ms, f"member {member.member_id} rejoined")
