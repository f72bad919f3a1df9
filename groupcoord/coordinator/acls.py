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
from groupcoord.security.acls import AclError


def handle_alter_acls(ctx: CoordinatorContext, request: AlterAclsRequest, now_ms: int, token: Token) -> None:
    """Create and delete, answering per creation and per filter."""
    store = ctx.hard.acls
    created = []
    for binding in request.creations:
        try:
            binding.check()
        except AclError as exc:
            created.append(AclResult(Errors.INVALID_REQUEST, str(exc)))
            continue
        if binding not in store:  # append replays at once: a binding named twice is stored once
            ctx.append(new_acl_record(binding))
        created.append(AclResult(Errors.NONE))
    deleted = []
    for acl_filter in request.deletions:
        try:
            acl_filter.check()
        except AclError as exc:
            deleted.append(AclResult(Errors.INVALID_REQUEST, str(exc)))
            continue
        matches = tuple(store.matching(acl_filter))
        for binding in matches:  # gone from the store at once: a later filter does not match it again
            ctx.append(new_acl_tombstone(binding))
        deleted.append(AclResult(Errors.NONE, deleted=matches))
    ctx.respond(token, AlterAclsResponse(tuple(created), tuple(deleted)))
