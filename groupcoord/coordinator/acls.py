"""Changing ACLs: CreateAcls, DeleteAcls and ``groupcoord acls add|remove``.

Kafka's controller (``AclControlManager``) is the model: a creation Kafka would refuse (a pattern other than LITERAL
or PREFIXED, operation ANY, an empty name, a CLUSTER resource not named ``kafka-cluster``, a principal without
``Type:``) answers INVALID_REQUEST with Kafka's message and creates nothing; creating a binding that exists succeeds
without a record. Each deletion filter answers the bindings it matched (a filter with an UNKNOWN field:
INVALID_REQUEST), each deleted by a tombstone. The records are :mod:`.acl_records`.
"""

from __future__ import annotations

from groupcoord.coordinator.acl_records import new_acl_record, new_acl_tombstone
from groupcoord.coordinator.context import CoordinatorContext
from groupcoord.group.member import Token
from groupcoord.protocol.errors import Errors
from groupcoord.protocol.requests import AlterAclsRequest
from groupcoord.protocol.responses import AclResult, AlterAclsResponse
from groupcoord.security.acls import AclBinding, AclError, AclFilter


def handle_alter_acls(ctx: CoordinatorContext, request: AlterAclsRequest, now_ms: int, token: Token) -> None:
    """Create and delete, answering per creation and per filter."""
    created = tuple(_create(ctx, binding) for binding in request.creations)
    deleted = tuple(_delete(ctx, acl_filter) for acl_filter in request.deletions)
    ctx.respond(token, AlterAclsResponse(created, deleted))


def _create(ctx: CoordinatorContext, binding: AclBinding) -> AclResult:
    problem = _refused(binding)
    if problem is not None:
        return problem
    if binding not in ctx.hard.acls:  # append replays at once: a binding named twice is stored once
        ctx.append(new_acl_record(binding))
    return AclResult(Errors.NONE)


def _delete(ctx: CoordinatorContext, acl_filter: AclFilter) -> AclResult:
    problem = _refused(acl_filter)
    if problem is not None:
        return problem
    matches = tuple(ctx.hard.acls.matching(acl_filter))
    for binding in matches:  # gone from the store at once: a later filter does not match it again
        ctx.append(new_acl_tombstone(binding))
    return AclResult(Errors.NONE, deleted=matches)


def _refused(checked: AclBinding | AclFilter) -> AclResult | None:
    """INVALID_REQUEST with Kafka's reason when ``checked`` is not acceptable, else ``None``."""
    try:
        checked.check()
    except AclError as exc:
        return AclResult(Errors.INVALID_REQUEST, str(exc))
    return None
