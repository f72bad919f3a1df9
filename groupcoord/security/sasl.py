"""Choosing the server side of a SASL exchange by mechanism name."""

from __future__ import annotations

from typing import Protocol

from groupcoord.security.credentials import PLAIN_MECHANISM, CredentialStore
from groupcoord.security.plain import PlainCredential, PlainServer
from groupcoord.security.scram import ScramCredential, ScramMechanism, ScramServer


class SaslServer(Protocol):
    """One exchange: feed each client token to :meth:`evaluate` until :attr:`complete`."""

    username: str | None

    @property
    def complete(self) -> bool:
        """Whether the exchange succeeded."""

    def evaluate(self, token: bytes) -> bytes:
        """The answer to a client token; raises :class:`~groupcoord.security.errors.AuthenticationFailed`."""


def sasl_server(mechanism: str, store: CredentialStore) -> SaslServer:
    """The server for ``mechanism`` (one of :data:`~groupcoord.security.credentials.SUPPORTED_MECHANISMS`)."""
    if mechanism == PLAIN_MECHANISM:
        def plain(user: str) -> PlainCredential | None:
            found = store.credential(user, PLAIN_MECHANISM)
            return found if isinstance(found, PlainCredential) else None
        return PlainServer(plain)

    def scram(user: str) -> ScramCredential | None:
        found = store.credential(user, mechanism)
        return found if isinstance(found, ScramCredential) else None
    return ScramServer(ScramMechanism.named(mechanism), scram)
