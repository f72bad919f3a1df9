"""SyncGroup (Kafka's ``handleSyncGroup``) and the shell's answer for server-side assignment.

For a leader-assigned group the leader's SyncGroup carries everyone's assignment; for a ``server-<assignor>``
group the coordinator asked the shell (``NeedsAssignment``) and :func:`complete_assignment` brings the result.
Either way the assignment is persisted before any SyncGroup is answered.
"""

from __future__ import annotations

import logging

from groupcoord.coordinator import rebalance
from groupcoord.coordinator.context import CoordinatorContext
from groupcoord.coordinator.effects import CompleteAssignment
from groupcoord.coordinator.validation import current_member_group
from groupcoord.group.group import ClassicGroup, is_server_side
from groupcoord.group.member import Token
from groupcoord.group.state import GroupState
from groupcoord.protocol.errors import ErrorCode, Errors, ProtocolError
from groupcoord.protocol.requests import SyncGroupRequest
from groupcoord.protocol.responses import SyncGroupResponse

log = logging.getLogger("groupcoord.coordinator.sync")

_S = GroupState


def handle_sync(ctx: CoordinatorContext, request: SyncGroupRequest, now_ms: int, token: Token) -> None:
    """Handle one SyncGroup; in CompletingRebalance its response waits for the persisted assignment."""
    group = current_member_group(
        ctx.groups, request.group_id, request.member_id, request.group_instance_id, request.generation_id)
    if request.protocol_type is not None and request.protocol_type != group.protocol_type:
        raise ProtocolError(Errors.INCONSISTENT_GROUP_PROTOCOL, f"protocol type is {group.protocol_type}")
    if request.protocol_name is not None and request.protocol_name != group.protocol_name:
        raise ProtocolError(Errors.INCONSISTENT_GROUP_PROTOCOL, f"protocol is {group.protocol_name}")
    assigned_ids = [a.member_id for a in request.assignments]
    if len(set(assigned_ids)) != len(assigned_ids):
        raise ProtocolError(Errors.INVALID_REQUEST, "a member is assigned twice")
    if group.is_in(_S.EMPTY):
        raise ProtocolError(Errors.UNKNOWN_MEMBER_ID, f"group {group.group_id} is empty")
    if group.is_in(_S.PREPARING_REBALANCE):
        raise ProtocolError(Errors.REBALANCE_IN_PROGRESS, f"group {group.group_id} is rebalancing")
    member = group.get(request.member_id)
    if group.is_in(_S.STABLE):
        # As in Kafka, a SyncGroup of a Stable group is no sign of life: the session runs on. (A member that keeps
        # refusing the assignment it is handed back, and rejoins and syncs again, expires and rejoins afresh.)
        rebalance.mark_synced(ctx, group, member.member_id)
        ctx.respond(token, SyncGroupResponse(error=Errors.NONE, protocol_type=group.protocol_type,
                                             protocol_name=group.protocol_name, assignment=member.assignment))
        return
    member.sync_tokens.append(token)
    rebalance.mark_synced(ctx, group, member.member_id)
    if not group.is_leader(member.member_id) or is_server_side(group.protocol_name):
        return  # wait for the leader's assignment (or the server assignor's), ignoring this one's
    if request.assignment_error is not None and request.assignment_error.is_error:
        log.info("group %s: the leader reports %s", group.group_id, request.assignment_error.name)
        _fail_assignment(ctx, group, request.assignment_error, now_ms)
        return
    assignments = {a.member_id: a.assignment for a in request.assignments}
    rebalance.persist_assignment(ctx, group, assignments, now_ms)


def _fail_assignment(ctx: CoordinatorContext, group: ClassicGroup, error: ErrorCode, now_ms: int) -> None:
    """Seed 004, "Assignment Failure": every waiting member gets the error, and the group rebalances."""
    rebalance.reset_and_propagate_assignment_error(ctx, group, error, now_ms)
    rebalance.maybe_prepare_rebalance(ctx, group, now_ms, f"assignment failed with {error.name}")


def complete_assignment(ctx: CoordinatorContext, answer: CompleteAssignment, now_ms: int) -> None:
    """Apply the shell's server-side assignment; an answer for a generation that is no longer current is dropped."""
    group = ctx.groups.get(answer.group_id)
    if (group is None or not group.is_in(_S.COMPLETING_REBALANCE) or group.generation_id != answer.generation_id
            or not is_server_side(group.protocol_name)):
        log.info("group %s: dropping the assignment of stale generation %s", answer.group_id, answer.generation_id)
        return
    if answer.error.is_error:
        _fail_assignment(ctx, group, answer.error, now_ms)
        return
    rebalance.persist_assignment(ctx, group, dict(answer.assignments or {}), now_ms)
