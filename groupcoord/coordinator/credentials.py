"""Changing users' credentials: AlterUserScramCredentials and ``groupcoord users add|remove``.

Kafka's controller (``ScramControlManager``) is the model: a user may be named once per request (twice, even for two
mechanisms, is DUPLICATE_RESOURCE), a deletion of a credential that does not
exist RESOURCE_NOT_FOUND, iterations outside 4096-16384 or an empty name UNACCEPTABLE_CREDENTIAL, and an unknown
mechanism UNSUPPORTED_SASL_MECHANISM. The new credentials become records (:mod:`.credential_records`).
"""

from __future__ import annotations

from groupcoord.coordinator.context import CoordinatorContext
from groupcoord.coordinator.credential_records import new_user_credential_record, new_user_credential_tombstone
from groupcoord.group.member import Token
from groupcoord.protocol.errors import Errors
from groupcoord.protocol.requests import AlterCredentialsRequest, CredentialChange
from groupcoord.protocol.responses import AlterCredentialsResponse, UserResult
from groupcoord.security.credentials import SUPPORTED_MECHANISMS
from groupcoord.security.scram import MAX_ITERATIONS, MIN_ITERATIONS, ScramCredential


def handle_alter(ctx: CoordinatorContext, request: AlterCredentialsRequest, now_ms: int, token: Token) -> None:
    """Apply each user's change, or answer its problem."""
    by_user: dict[str, list[CredentialChange]] = {}
    for change in request.changes:
        by_user.setdefault(change.user, []).append(change)
    results = []
    for user, changes in by_user.items():
        problem = _problem(ctx, user, changes)
        if problem is not None:
            results.append(problem)
            continue
        for change in changes:
            if change.credential is None:
                ctx.append(new_user_credential_tombstone(user, change.mechanism))
            else:
                ctx.append(new_user_credential_record(user, change.mechanism, change.credential))
        results.append(UserResult(user, Errors.NONE))
    ctx.respond(token, AlterCredentialsResponse(tuple(results)))


def _problem(ctx: CoordinatorContext, user: str, changes: list[CredentialChange]) -> UserResult | None:
    if len(changes) > 1:
        return UserResult(user, Errors.DUPLICATE_RESOURCE,
                          "A user credential cannot be altered twice in the same request")
    if not user:
        return UserResult(user, Errors.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
    for change in changes:
        if change.mechanism not in SUPPORTED_MECHANISMS:
            return UserResult(user, Errors.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
        if change.credential is None:
            if ctx.hard.credentials.credential(user, change.mechanism) is None:
                return UserResult(user, Errors.RESOURCE_NOT_FOUND,
                                  "Attempt to delete a user credential that does not exist")
        elif isinstance(change.credential, ScramCredential):
            if change.credential.iterations < MIN_ITERATIONS:
                return UserResult(user, Errors.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
            if change.credential.iterations > MAX_ITERATIONS:
                return UserResult(user, Errors.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
    return None
