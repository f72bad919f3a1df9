"""The users the endpoint authenticates: a credential per user and mechanism, looked up by the SASL servers.

:class:`Credentials` is the in-memory table; the coordinator's hard state keeps one, changed only by replaying
credential records, and the endpoint reads it through :class:`CredentialStore`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from groupcoord.security.plain import PlainCredential
from groupcoord.security.scram import ScramCredential, ScramMechanism

PLAIN_MECHANISM = "PLAIN"

SUPPORTED_MECHANISMS = (PLAIN_MECHANISM, *(m.mechanism_name for m in ScramMechanism))
"""Every SASL mechanism the endpoint can serve."""

Credential = ScramCredential | PlainCredential
"""A stored credential of either kind."""


class CredentialStore(Protocol):
    """Where a SASL server finds a user's stored credential for a mechanism."""

    def credential(self, user: str, mechanism: str) -> Credential | None:
        """The credential of ``user`` for ``mechanism`` (``PLAIN``, ``SCRAM-SHA-256``...), ``None`` if none."""


class Credentials:
    """A table of credentials by user and mechanism name."""

    def __init__(self) -> None:
        self._by_user: dict[str, dict[str, Credential]] = {}

    def credential(self, user: str, mechanism: str) -> Credential | None:
        """The credential of ``user`` for ``mechanism``, ``None`` if none."""
        return self._by_user.get(user, {}).get(mechanism)

    def put(self, user: str, mechanism: str, credential: Credential) -> None:
        """Set (or replace) ``user``'s credential for ``mechanism``."""
        check_credential_kind(mechanism, credential)
        self._by_user.setdefault(user, {})[mechanism] = credential

    def remove(self, user: str, mechanism: str) -> None:
        """Drop ``user``'s credential for ``mechanism`` (nothing if there is none)."""
        mechanisms = self._by_user.get(user)
        if mechanisms is not None:
            mechanisms.pop(mechanism, None)
            if not mechanisms:
                del self._by_user[user]

    def users(self) -> list[str]:
        """Every user with at least one credential, sorted."""
        return sorted(self._by_user)

    def mechanisms(self, user: str) -> dict[str, Credential]:
        """``user``'s credentials by mechanism name (a copy)."""
        return dict(sorted(self._by_user.get(user, {}).items()))

    def items(self) -> Iterator[tuple[str, str, Credential]]:
        """Every ``(user, mechanism, credential)``, sorted by user then mechanism."""
        for user in self.users():
            for mechanism, credential in self.mechanisms(user).items():
                yield user, mechanism, credential


def check_credential_kind(mechanism: str, credential: Credential) -> None:
    """Raise ``ValueError`` unless ``credential`` is the kind ``mechanism`` uses."""
    if mechanism == PLAIN_MECHANISM:
        if not isinstance(credential, PlainCredential):
            raise ValueError("a PLAIN credential must be a salted hash")
        return
    ScramMechanism.named(mechanism)
    if not isinstance(credential, ScramCredential):
        raise ValueError(f"a {mechanism} credential must be a SCRAM credential")
