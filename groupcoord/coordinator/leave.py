"""LeaveGroup (Kafka's ``handleLeaveGroup``), single or batched, by member id or, for admins, by instance id."""

from __future__ import annotations

from groupcoord.coordinator import rebalance
from groupcoord.coordinator.context import CoordinatorContext
from groupcoord.coordinator.validation import throw_if_dead, throw_if_invalid_group_id
from groupcoord.group.member import Token
from groupcoord.protocol.errors import ErrorCode, Errors, ProtocolError
from groupcoord.protocol.requests import UNKNOWN_MEMBER_ID, LeaveGroupRequest, MemberIdentity
from groupcoord.protocol.responses import LeaveGroupMemberResponse, LeaveGroupResponse


def _identity(member: MemberIdentity) -> tuple[str, str | None]:
    return member.member_id, member.group_instance_id


def handle_leave(ctx: CoordinatorContext, request: LeaveGroupRequest, now_ms: int, token: Token) -> None:
    """Remove each listed member; per-member errors, the group rebalances once the members are gone.

    A batch naming a member twice, or naming nobody, is INVALID_REQUEST and removes no one.
    """
    throw_if_invalid_group_id(request.group_id)
    if not request.members:
        raise ProtocolError(Errors.INVALID_REQUEST, "no members to remove")
    identities = [_identity(m) for m in request.members]
    if len(set(identities)) != len(identities):
        raise ProtocolError(Errors.INVALID_REQUEST, "a member is listed twice")
    group = ctx.groups.get(request.group_id)
    results: list[LeaveGroupMemberResponse] = []
    if group is None:
        results = [LeaveGroupMemberResponse(m.member_id, m.group_instance_id, Errors.UNKNOWN_MEMBER_ID)
                   for m in request.members]
        ctx.respond(token, LeaveGroupResponse(error=Errors.NONE, members=tuple(results)))
        return
    throw_if_dead(group)
    for leaving in request.members:
        error: ErrorCode = Errors.NONE
        if leaving.member_id == UNKNOWN_MEMBER_ID:
            current = group.current_static_member_id(leaving.group_instance_id)
            if current is None:
                error = Errors.UNKNOWN_MEMBER_ID
            else:
                rebalance.remove_member_and_update_group(ctx, group, group.get(current), now_ms)
        elif group.is_pending_member(leaving.member_id):
            rebalance.remove_pending_member(ctx, group, leaving.member_id, now_ms)
        elif group.is_static_member_fenced(leaving.group_instance_id, leaving.member_id):
            error = Errors.FENCED_INSTANCE_ID
        elif not group.has(leaving.member_id):
            error = Errors.UNKNOWN_MEMBER_ID
        else:
            rebalance.remove_member_and_update_group(ctx, group, group.get(leaving.member_id), now_ms)
        results.append(LeaveGroupMemberResponse(leaving.member_id, leaving.group_instance_id, error))
    ctx.respond(token, LeaveGroupResponse(error=Errors.NONE, members=tuple(results)))
