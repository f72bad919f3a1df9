"""Group membership APIs on the wire: JoinGroup, SyncGroup, Heartbeat, LeaveGroup <-> the core's frozen types."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kafka.protocol.consumer import JoinGroupResponse as WireJoinGroupResponse
from kafka.protocol.consumer import LeaveGroupResponse as WireLeaveGroupResponse

from groupcoord.protocol.errors import ErrorCode, Errors
from groupcoord.protocol.requests import (
    GroupRequest,
    HeartbeatRequest,
    JoinGroupProtocol,
    JoinGroupRequest,
    LeaveGroupRequest,
    MemberIdentity,
    SyncGroupAssignment,
    SyncGroupRequest,
)
from groupcoord.protocol.responses import (
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    SyncGroupResponse,
)
from groupcoord.server.adapters.core import Outcome
from groupcoord.server.api import RequestContext

_JoinMember = WireJoinGroupResponse.JoinGroupResponseMember
_LeaveMember = WireLeaveGroupResponse.MemberResponse


def single(outcomes: Sequence[Outcome], on_error: Any) -> Any:
    """The one outcome of a single-request API, with an error turned into ``on_error(error)``."""
    (outcome,) = outcomes
    return on_error(outcome) if isinstance(outcome, ErrorCode) else outcome


class JoinGroupMapping:
    """JoinGroup v0-v9. v0 has no rebalance timeout (-1: the session timeout); v9 carries ``skip_assignment``."""

    def to_core(self, ctx: RequestContext) -> Sequence[GroupRequest]:
        """One core JoinGroupRequest."""
        body = ctx.body
        return [
            JoinGroupRequest(
                group_id=body.group_id,
                session_timeout_ms=body.session_timeout_ms,
                rebalance_timeout_ms=body.rebalance_timeout_ms if ctx.api_version >= 1 else -1,
                member_id=body.member_id,
                group_instance_id=body.group_instance_id if ctx.api_version >= 5 else None,
                protocol_type=body.protocol_type,
                protocols=tuple(JoinGroupProtocol(p.name, bytes(p.metadata)) for p in body.protocols),
                reason=body.reason if ctx.api_version >= 8 else None,
                client_id=ctx.client_id,
                client_host=ctx.client_host,
                require_known_member_id=ctx.api_version >= 4,
                supports_skip_assignment=ctx.api_version >= 9,
            )
        ]

    def to_wire(self, ctx: RequestContext, requests: Sequence[GroupRequest], outcomes: Sequence[Outcome]) -> Any:
        """The member's JoinGroup response (the leader also gets every member's metadata)."""
        response: JoinGroupResponse = single(outcomes, lambda error: JoinGroupResponse(error=error))
        protocol_name = response.protocol_name
        if protocol_name is None and ctx.api_version < 7:
            protocol_name = ""  # nullable only from v7
        return ctx.response(
            throttle_time_ms=0,
            error_code=response.error.code,
            generation_id=response.generation_id,
            protocol_type=response.protocol_type,
            protocol_name=protocol_name,
            leader=response.leader,
            skip_assignment=response.skip_assignment,
            member_id=response.member_id,
            members=[
                _JoinMember(member_id=m.member_id, group_instance_id=m.group_instance_id, metadata=m.metadata)
                for m in response.members
            ],
        )


class SyncGroupMapping:
    """SyncGroup v0-v5 (v5 adds protocol type and name, which the coordinator checks)."""

    def to_core(self, ctx: RequestContext) -> Sequence[GroupRequest]:
        """One core SyncGroupRequest."""
        body = ctx.body
        return [
            SyncGroupRequest(
                group_id=body.group_id,
                generation_id=body.generation_id,
                member_id=body.member_id,
                group_instance_id=body.group_instance_id if ctx.api_version >= 3 else None,
                protocol_type=body.protocol_type if ctx.api_version >= 5 else None,
                protocol_name=body.protocol_name if ctx.api_version >= 5 else None,
                assignments=tuple(SyncGroupAssignment(a.member_id, bytes(a.assignment)) for a in body.assignments),
            )
        ]

    def to_wire(self, ctx: RequestContext, requests: Sequence[GroupRequest], outcomes: Sequence[Outcome]) -> Any:
        """This member's assignment."""
        response: SyncGroupResponse = single(outcomes, lambda error: SyncGroupResponse(error=error))
        return ctx.response(
            throttle_time_ms=0,
            error_code=response.error.code,
            protocol_type=response.protocol_type,
            protocol_name=response.protocol_name,
            assignment=response.assignment,
        )


class HeartbeatMapping:
    """Heartbeat v0-v4."""

    def to_core(self, ctx: RequestContext) -> Sequence[GroupRequest]:
        """One core HeartbeatRequest."""
        body = ctx.body
        return [
            HeartbeatRequest(
                group_id=body.group_id,
                generation_id=body.generation_id,
                member_id=body.member_id,
                group_instance_id=body.group_instance_id if ctx.api_version >= 3 else None,
            )
        ]

    def to_wire(self, ctx: RequestContext, requests: Sequence[GroupRequest], outcomes: Sequence[Outcome]) -> Any:
        """The heartbeat's error code."""
        response: HeartbeatResponse = single(outcomes, lambda error: HeartbeatResponse(error=error))
        return ctx.response(throttle_time_ms=0, error_code=response.error.code)


class LeaveGroupMapping:
    """LeaveGroup v0-v5: one member by id up to v2, a batch of members (KIP-345) from v3."""

    def to_core(self, ctx: RequestContext) -> Sequence[GroupRequest]:
        """One core LeaveGroupRequest with every member."""
        body = ctx.body
        if ctx.api_version < 3:
            members: tuple[MemberIdentity, ...] = (MemberIdentity(member_id=body.member_id),)
        else:
            members = tuple(
                MemberIdentity(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    reason=m.reason if ctx.api_version >= 5 else None,
                )
                for m in body.members
            )
        return [LeaveGroupRequest(group_id=body.group_id, members=members)]

    def to_wire(self, ctx: RequestContext, requests: Sequence[GroupRequest], outcomes: Sequence[Outcome]) -> Any:
        """Up to v2 the single member's error is the top-level error; from v3 each member has its own.

        A failed request has only a top-level error and no members, as in Kafka.
        """
        response: LeaveGroupResponse = single(outcomes, lambda error: LeaveGroupResponse(error=error))
        if ctx.api_version < 3:
            error = response.error
            if error is Errors.NONE and response.members:
                error = response.members[0].error
            return ctx.response(throttle_time_ms=0, error_code=error.code)
        return ctx.response(
            throttle_time_ms=0,
            error_code=response.error.code,
            members=[
                _LeaveMember(member_id=m.member_id, group_instance_id=m.group_instance_id, error_code=m.error.code)
                for m in response.members
            ],
        )

