"""Group administration APIs on the wire: DescribeGroups, ListGroups, DeleteGroups."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kafka.protocol.admin import DescribeGroupsResponse as WireDescribeGroupsResponse
from kafka.protocol.admin import ListGroupsResponse as WireListGroupsResponse

from groupcoord.protocol.errors import ErrorCode, Errors
from groupcoord.protocol.requests import DeleteGroupsRequest, DescribeGroupsRequest, GroupRequest, ListGroupsRequest
from groupcoord.protocol.responses import (
    DeletedGroup,
    DeleteGroupsResponse,
    DescribedGroup,
    DescribeGroupsResponse,
    ListGroupsResponse,
)
from groupcoord.server.adapters.core import Outcome
from groupcoord.server.adapters.groups import single
from groupcoord.server.api import RequestContext

_Group = WireDescribeGroupsResponse.DescribedGroup
_Member = _Group.DescribedGroupMember
_Listed = WireListGroupsResponse.ListedGroup

# Kafka's state name for a group it cannot describe.
_DEAD = "Dead"

GROUP_OPERATIONS = frozenset({3, 6, 8, 10, 11})
"""The authorized operations Kafka reports for a group when no authorizer is configured (every operation a group
supports: READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS, by ``AclOperation`` code: the bits kafka-python's
bitfield sets); groupcoord has no ACLs either. ``None`` is the wire default, not asked for."""


def _describe_error(error: ErrorCode, version: int, group_id: str) -> tuple[ErrorCode, str | None]:
    """The error (and v6's message) of one described group: an unknown group is NO_ERROR below v6 (state Dead),
    GROUP_ID_NOT_FOUND from v6 (KIP-1043), as Kafka answers."""
    if error is Errors.GROUP_ID_NOT_FOUND and version < 6:
        return Errors.NONE, None
    if error is Errors.GROUP_ID_NOT_FOUND:
        return error, f"Group {group_id} not found."
    return error, None


class DescribeGroupsMapping:
    """DescribeGroups v0-v6: state, protocol and members of each group; v3+ the authorized operations when asked
    (every group operation: groupcoord has no ACLs, like a Kafka broker without an authorizer)."""

    def to_core(self, ctx: RequestContext) -> Sequence[GroupRequest]:
        """One core DescribeGroupsRequest with every group."""
        return [DescribeGroupsRequest(groups=tuple(ctx.body.groups))]

    def to_wire(self, ctx: RequestContext, requests: Sequence[GroupRequest], outcomes: Sequence[Outcome]) -> Any:
        """One entry per group; a failed request gives each group its error and state Dead."""
        (request,) = requests
        assert isinstance(request, DescribeGroupsRequest)
        response: DescribeGroupsResponse = single(
            outcomes,
            lambda error: DescribeGroupsResponse(
                groups=tuple(DescribedGroup(error=error, group_id=g, state=_DEAD) for g in request.groups)
            ),
        )
        with_operations = ctx.api_version >= 3 and bool(ctx.body.include_authorized_operations)
        described = []
        for group in response.groups:
            error, message = _describe_error(group.error, ctx.api_version, group.group_id)
            operations = GROUP_OPERATIONS if with_operations and error is Errors.NONE else None
            described.append((group, error, message, operations))
        return ctx.response(
            throttle_time_ms=0,
            groups=[
                _Group(
                    error_code=error.code,
                    error_message=message,
                    authorized_operations=operations,
                    group_id=group.group_id,
                    group_state=group.state,
                    protocol_type=group.protocol_type,
                    protocol_data=group.protocol,
                    members=[
                        _Member(
                            member_id=m.member_id,
                            group_instance_id=m.group_instance_id,
                            client_id=m.client_id,
                            client_host=m.client_host,
                            member_metadata=m.metadata,
                            member_assignment=m.assignment,
                        )
                        for m in group.members
                    ],
                )
                for group, error, message, operations in described
            ],
        )


class ListGroupsMapping:
    """ListGroups v0-v5 (v4 adds the KIP-518 states filter and each group's state, v5 the KIP-848 types filter and
    each group's type, ``classic`` or ``consumer``)."""

    def to_core(self, ctx: RequestContext) -> Sequence[GroupRequest]:
        """One core ListGroupsRequest."""
        states = tuple(ctx.body.states_filter or ()) if ctx.api_version >= 4 else ()
        types = tuple(ctx.body.types_filter or ()) if ctx.api_version >= 5 else ()
        return [ListGroupsRequest(states_filter=states, types_filter=types)]

    def to_wire(self, ctx: RequestContext, requests: Sequence[GroupRequest], outcomes: Sequence[Outcome]) -> Any:
        """The listed groups."""
        response: ListGroupsResponse = single(outcomes, lambda error: ListGroupsResponse(error=error))
        return ctx.response(
            throttle_time_ms=0,
            error_code=response.error.code,
            groups=[
                _Listed(group_id=g.group_id, protocol_type=g.protocol_type, group_state=g.state,
                        group_type=g.group_type)
                for g in response.groups
            ],
        )


class DeleteGroupsMapping:
    """DeleteGroups v0-v3, served through Kafka's schemas (kafka-python's stop at v2). v3 adds a message to each
    result, which Kafka 4.4 leaves null for every outcome this coordinator gives (checked against the broker)."""

    def to_core(self, ctx: RequestContext) -> Sequence[GroupRequest]:
        """One core DeleteGroupsRequest with every group."""
        return [DeleteGroupsRequest(groups=tuple(ctx.body["GroupsNames"]))]

    def to_wire(self, ctx: RequestContext, requests: Sequence[GroupRequest], outcomes: Sequence[Outcome]) -> Any:
        """One result per group; a failed request gives each group its error."""
        (request,) = requests
        assert isinstance(request, DeleteGroupsRequest)
        response: DeleteGroupsResponse = single(
            outcomes,
            lambda error: DeleteGroupsResponse(results=tuple(DeletedGroup(g, error) for g in request.groups)),
        )
        return ctx.response(ThrottleTimeMs=0, Results=[
            {"GroupId": r.group_id, "ErrorCode": r.error.code, "ErrorMessage": None} for r in response.results])
