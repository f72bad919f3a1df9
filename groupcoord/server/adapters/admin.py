"""Group administration APIs on the wire: DescribeGroups, ListGroups, DeleteGroups."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kafka.protocol.admin import DeleteGroupsResponse as WireDeleteGroupsResponse
from kafka.protocol.admin import DescribeGroupsResponse as WireDescribeGroupsResponse
from kafka.protocol.admin import ListGroupsResponse as WireListGroupsResponse

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
_Deleted = WireDeleteGroupsResponse.DeletableGroupResult

# Kafka's state name for a group it cannot describe.
_DEAD = "Dead"


class DescribeGroupsMapping:
    """DescribeGroups v0-v5: state, protocol and members of each group (authorized operations are not tracked)."""

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
        return ctx.response(
            throttle_time_ms=0,
            groups=[
                _Group(
                    error_code=group.error.code,
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
                for group in response.groups
            ],
        )


class ListGroupsMapping:
    """ListGroups v0-v4 (v4 adds the KIP-518 states filter and each group's state)."""

    def to_core(self, ctx: RequestContext) -> Sequence[GroupRequest]:
        """One core ListGroupsRequest."""
        states = tuple(ctx.body.states_filter or ()) if ctx.api_version >= 4 else ()
        return [ListGroupsRequest(states_filter=states)]

    def to_wire(self, ctx: RequestContext, requests: Sequence[GroupRequest], outcomes: Sequence[Outcome]) -> Any:
        """The listed groups."""
        response: ListGroupsResponse = single(outcomes, lambda error: ListGroupsResponse(error=error))
        return ctx.response(
            throttle_time_ms=0,
            error_code=response.error.code,
            groups=[
                _Listed(group_id=g.group_id, protocol_type=g.protocol_type, group_state=g.state)
                for g in response.groups
            ],
        )


class DeleteGroupsMapping:
    """DeleteGroups v0-v2."""

    def to_core(self, ctx: RequestContext) -> Sequence[GroupRequest]:
        """One core DeleteGroupsRequest with every group."""
        return [DeleteGroupsRequest(groups=tuple(ctx.body.groups_names))]

    def to_wire(self, ctx: RequestContext, requests: Sequence[GroupRequest], outcomes: Sequence[Outcome]) -> Any:
        """One result per group; a failed request gives each group its error."""
        (request,) = requests
        assert isinstance(request, DeleteGroupsRequest)
        response: DeleteGroupsResponse = single(
            outcomes,
            lambda error: DeleteGroupsResponse(results=tuple(DeletedGroup(g, error) for g in request.groups)),
        )
        return ctx.response(
            throttle_time_ms=0,
            results=[_Deleted(group_id=r.group_id, error_code=r.error.code) for r in response.results],
        )
