"""DescribeAcls (29), CreateAcls (30) and DeleteAcls (31): Kafka's admin clients (``kafka-acls.sh``,
``Admin.createAcls``, kafka-python's ``KafkaAdminClient.create_acls``) manage the coordinator's ACLs.

Describe reads the ACLs as they are, grouped by resource pattern as Kafka answers; Create and Delete become one core
request each (:class:`~groupcoord.protocol.requests.AlterAclsRequest`), answered per creation and per filter. A code
outside Kafka's enums reads as UNKNOWN, which the core refuses with INVALID_REQUEST, as Kafka does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import IntEnum
from typing import Any, TypeVar

from groupcoord.protocol.errors import ErrorCode, Errors
from groupcoord.protocol.requests import AlterAclsRequest, GroupRequest
from groupcoord.protocol.responses import AclResult, AlterAclsResponse
from groupcoord.security.acl_store import AclStore
from groupcoord.security.acls import (
    AclBinding,
    AclError,
    AclFilter,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)
from groupcoord.server.adapters.core import Outcome
from groupcoord.server.api import RequestContext

_E = TypeVar("_E", bound=IntEnum)


def _code(enum: type[_E], value: int) -> _E:
    try:
        return enum(value)
    except ValueError:
        return enum(0)  # UNKNOWN


def filter_of(body: Mapping[str, Any]) -> AclFilter:
    """The ACL filter of a DescribeAcls request or of one DeleteAcls filter."""
    return AclFilter(_code(ResourceType, body["ResourceTypeFilter"]), body["ResourceNameFilter"],
                     _code(PatternType, body["PatternTypeFilter"]), body["PrincipalFilter"], body["HostFilter"],
                     _code(Operation, body["Operation"]), _code(Permission, body["PermissionType"]))


def binding_of(creation: Mapping[str, Any]) -> AclBinding:
    """The binding one CreateAcls creation asks for (unchecked)."""
    return AclBinding(_code(ResourceType, creation["ResourceType"]), creation["ResourceName"],
                      _code(PatternType, creation["ResourcePatternType"]), creation["Principal"], creation["Host"],
                      _code(Operation, creation["Operation"]), _code(Permission, creation["PermissionType"]))


def _acl_fields(binding: AclBinding) -> dict[str, Any]:
    return {"Principal": binding.principal, "Host": binding.host, "Operation": int(binding.operation),
            "PermissionType": int(binding.permission)}


def _resource_fields(binding: AclBinding) -> dict[str, Any]:
    return {"ResourceType": int(binding.resource_type), "ResourceName": binding.name,
            "PatternType": int(binding.pattern_type)}


class DescribeAclsAdapter:
    """The bindings the request's filter matches, grouped by resource pattern."""

    def __init__(self, acls: AclStore) -> None:
        self._acls = acls

    async def handle(self, ctx: RequestContext) -> Any:
        """INVALID_REQUEST for a filter with an UNKNOWN field, as Kafka's request validation."""
        try:
            acl_filter = filter_of(ctx.body).check()
        except AclError as exc:
            return ctx.response(ThrottleTimeMs=0, ErrorCode=Errors.INVALID_REQUEST.code, ErrorMessage=str(exc),
                                Resources=[])
        resources: dict[tuple[int, str, int], list[dict[str, Any]]] = {}
        for binding in self._acls.matching(acl_filter):
            key = (int(binding.resource_type), binding.name, int(binding.pattern_type))
            resources.setdefault(key, []).append(_acl_fields(binding))
        return ctx.response(ThrottleTimeMs=0, ErrorCode=0, ErrorMessage=None, Resources=[
            {"ResourceType": kind, "ResourceName": name, "PatternType": pattern, "Acls": acls}
            for (kind, name, pattern), acls in resources.items()])

    def error_response(self, ctx: RequestContext, error: ErrorCode) -> Any:
        """``error`` at the top level."""
        return ctx.response(ThrottleTimeMs=0, ErrorCode=error.code, ErrorMessage=None, Resources=[])


def _result(result: AclResult) -> dict[str, Any]:
    return {"ErrorCode": result.error.code, "ErrorMessage": result.message}


class CreateAclsMapping:
    """CreateAcls v1-3 <-> one core :class:`AlterAclsRequest` of creations."""

    def to_core(self, ctx: RequestContext) -> Sequence[GroupRequest]:
        """Every creation, in order."""
        return [AlterAclsRequest(creations=tuple(binding_of(c) for c in ctx.body.get("Creations") or []))]

    def to_wire(self, ctx: RequestContext, requests: Sequence[GroupRequest], outcomes: Sequence[Outcome]) -> Any:
        """One result per creation."""
        (request,), (outcome,) = requests, outcomes
        assert isinstance(request, AlterAclsRequest)
        results = (outcome.created if isinstance(outcome, AlterAclsResponse)
                   else [AclResult(outcome)] * len(request.creations))
        return ctx.response(ThrottleTimeMs=0, Results=[_result(r) for r in results])


class DeleteAclsMapping:
    """DeleteAcls v1-3 <-> one core :class:`AlterAclsRequest` of deletion filters."""

    def to_core(self, ctx: RequestContext) -> Sequence[GroupRequest]:
        """Every filter, in order."""
        return [AlterAclsRequest(deletions=tuple(filter_of(f) for f in ctx.body.get("Filters") or []))]

    def to_wire(self, ctx: RequestContext, requests: Sequence[GroupRequest], outcomes: Sequence[Outcome]) -> Any:
        """One result per filter, with the bindings it deleted."""
        (request,), (outcome,) = requests, outcomes
        assert isinstance(request, AlterAclsRequest)
        results = (outcome.deleted if isinstance(outcome, AlterAclsResponse)
                   else [AclResult(outcome)] * len(request.deletions))
        return ctx.response(ThrottleTimeMs=0, FilterResults=[
            {**_result(r), "MatchingAcls": [{"ErrorCode": 0, "ErrorMessage": None, **_resource_fields(b),
                                             **_acl_fields(b)} for b in r.deleted]}
            for r in results])
