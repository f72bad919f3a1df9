"""DescribeUserScramCredentials (50) and AlterUserScramCredentials (51): Kafka's admin clients manage SCRAM users.

Describe reads the coordinator's credentials as they are (mechanism and iterations, never a key); Alter turns the
upsertions (a salt and the client-computed SaltedPassword, so no password crosses the wire) and deletions into one
core request, answered per user. As Kafka, only SCRAM mechanisms are described; PLAIN credentials are altered with
the mechanism byte :data:`~groupcoord.security.credentials.PLAIN_WIRE_TYPE` (``groupcoord users``, a groupcoord
extension).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from groupcoord.protocol.errors import ErrorCode, Errors
from groupcoord.protocol.requests import AlterCredentialsRequest, CredentialChange, GroupRequest
from groupcoord.protocol.responses import AlterCredentialsResponse
from groupcoord.security.credentials import (
    PLAIN_MECHANISM,
    PLAIN_WIRE_TYPE,
    Credentials,
    SaltedPassword,
    credential_from_salted,
)
from groupcoord.security.scram import ScramCredential, ScramMechanism
from groupcoord.server.adapters.core import Outcome
from groupcoord.server.api import RequestContext

_UNKNOWN_MECHANISM = "unknown"


class DescribeUserScramCredentialsAdapter:
    """Each named user's SCRAM mechanisms and iterations (every user when none is named)."""

    def __init__(self, credentials: Credentials) -> None:
        self._credentials = credentials

    async def handle(self, ctx: RequestContext) -> Any:
        """RESOURCE_NOT_FOUND for a user without SCRAM credentials, DUPLICATE_RESOURCE for one named twice."""
        named = [user["Name"] for user in ctx.body.get("Users") or []]
        users = named or [u for u in self._credentials.users() if self._scram_of(u)]
        results = []
        for user in dict.fromkeys(users):
            infos = self._scram_of(user)
            if named.count(user) > 1:
                results.append(_user_result(user, Errors.DUPLICATE_RESOURCE, "Cannot describe SCRAM credentials "
                                            "for the same user twice in a single request"))
            elif not infos:
                results.append(_user_result(user, Errors.RESOURCE_NOT_FOUND,
                                            "Attempt to describe a user credential that does not exist"))
            else:
                results.append({**_user_result(user, Errors.NONE, None), "CredentialInfos": infos})
        return ctx.response(ErrorCode=0, ErrorMessage=None, Results=results)

    def _scram_of(self, user: str) -> list[dict[str, int]]:
        return [{"Mechanism": ScramMechanism.named(name).wire_type, "Iterations": credential.iterations}
                for name, credential in self._credentials.mechanisms(user).items()
                if isinstance(credential, ScramCredential)]

    def error_response(self, ctx: RequestContext, error: ErrorCode) -> Any:
        """``error`` at the top level."""
        return ctx.response(ErrorCode=error.code, ErrorMessage=None, Results=[])


def _user_result(user: str, error: ErrorCode, message: str | None) -> dict[str, Any]:
    return {"User": user, "ErrorCode": error.code, "ErrorMessage": message, "CredentialInfos": []}


class AlterUserScramCredentialsMapping:
    """AlterUserScramCredentials v0 <-> one core :class:`AlterCredentialsRequest`."""

    def to_core(self, ctx: RequestContext) -> Sequence[GroupRequest]:
        """The deletions and upsertions as credential changes (an unknown mechanism keeps a placeholder name the
        core refuses with UNSUPPORTED_SASL_MECHANISM)."""
        changes = [CredentialChange(d["Name"], _mechanism_name(d["Mechanism"]), None)
                   for d in ctx.body.get("Deletions") or []]
        for upsert in ctx.body.get("Upsertions") or []:
            name = _mechanism_name(upsert["Mechanism"])
            salted = SaltedPassword(bytes(upsert["Salt"]), bytes(upsert["SaltedPassword"]), upsert["Iterations"])
            credential = None if name == _UNKNOWN_MECHANISM else credential_from_salted(name, salted)
            changes.append(CredentialChange(upsert["Name"], name, credential))
        return [AlterCredentialsRequest(tuple(changes))]

    def to_wire(self, ctx: RequestContext, requests: Sequence[GroupRequest], outcomes: Sequence[Outcome]) -> Any:
        """One result per user."""
        (outcome,) = outcomes
        if isinstance(outcome, AlterCredentialsResponse):
            results = [{"User": r.user, "ErrorCode": r.error.code, "ErrorMessage": r.message}
                       for r in outcome.results]
        else:
            (request,) = requests
            assert isinstance(request, AlterCredentialsRequest)
            results = [{"User": user, "ErrorCode": outcome.code, "ErrorMessage": None}
                       for user in dict.fromkeys(change.user for change in request.changes)]
        return ctx.response(Results=results)


def _mechanism_name(wire_type: int) -> str:
    if wire_type == PLAIN_WIRE_TYPE:
        return PLAIN_MECHANISM
    mechanism = ScramMechanism.of_wire_type(wire_type)
    return mechanism.mechanism_name if mechanism is not None else _UNKNOWN_MECHANISM
