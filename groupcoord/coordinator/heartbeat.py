"""Heartbeat (Kafka's ``handleHeartbeat``): keeps a session alive and tells members when to rejoin."""

from __future__ import annotations

from groupcoord.coordinator import rebalance
from groupcoord.coordinator.context import CoordinatorContext
from groupcoord.coordinator.validation import current_member_group
from groupcoord.group.member import Token
from groupcoord.group.state import GroupState
from groupcoord.protocol.errors import Errors, ProtocolError
from groupcoord.protocol.requests import HeartbeatRequest
from groupcoord.protocol.responses import HeartbeatResponse


def handle_heartbeat(ctx: CoordinatorContext, request: HeartbeatRequest, now_ms: int, token: Token) -> None:
    """UNKNOWN_MEMBER_ID for strangers, ILLEGAL_GENERATION for another generation, REBALANCE_IN_PROGRESS while
    preparing a rebalance (the member must rejoin), else NONE; every accepted heartbeat restarts the session."""
    group = current_member_group(
        ctx.groups, request.group_id, request.member_id, request.group_instance_id, request.generation_id)
    if group.is_in(GroupState.EMPTY):
        raise ProtocolError(Errors.UNKNOWN_MEMBER_ID, f"group {group.group_id} is empty")
    rebalance.heartbeat(ctx, group, group.get(request.member_id), now_ms)
    error = Errors.REBALANCE_IN_PROGRESS if group.is_in(GroupState.PREPARING_REBALANCE) else Errors.NONE
    ctx.respond(token, HeartbeatResponse(error=error))
