"""DescribeAcls (29), CreateAcls (30) and DeleteAcls (31): Kafka's admin clients (``kafka-acls.sh``,
``Admin.createAcls``, kafka-python's ``KafkaAdminClient.create_acls``) manage the coordinator's ACLs.

Describe reads the ACLs as they are, grouped by resource pattern as Kafka answers; Create and Delete become one core
request each (:class:`~groupcoord.protocol.requests.AlterAclsRequest`), answered per creation and per filter. A code
outside Kafka's enums reads as UNKNOWN (:mod:`groupcoord.security.acl_wire`), which the core refuses with
INVALID_REQUEST, as Kafka does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from groupcoord.protocol.errors import ErrorCode, Errors
from groupcoord.protocol.requests import AlterAclsRequest, GroupRequest
from groupcoord.protocol.responses import AclResult, AlterAclsResponse
from groupcoord.security.acl_store import AclStore
from groupcoord.security.acl_wire import acl_fields, binding_of, filter_of, resource_fields
from groupcoord.security.acls import AclError
from groupcoord.server.adapters.core import Outcome
from groupcoord.server.api import RequestContext


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
            resources.setdefault(key, []).append(acl_fields(binding))
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
            {**_result(r), "MatchingAcls": [{"ErrorCode": 0, "ErrorMessage": None, **resource_fields(b),
                                             **acl_fields(b)} for b in r.deleted]}
            for r in results])
