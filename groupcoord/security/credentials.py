"""The users the endpoint authenticates: a credential per user and mechanism, looked up by the SASL servers.

:class:`Credentials` is the in-memory table; the coordinator's hard state keeps one, changed only by replaying
credential records, and the endpoint reads it through :class:`CredentialStore`.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

from groupcoord.security.plain import PLAIN_HASH, PlainCredential
from groupcoord.security.scram import (
    ScramCredential,
    ScramMechanism,
    check_iterations,
    credential_from_salted_password,
)

PLAIN_MECHANISM = "PLAIN"

SUPPORTED_MECHANISMS = (PLAIN_MECHANISM, *(m.mechanism_name for m in ScramMechanism))
"""Every SASL mechanism the endpoint can serve."""

Credential = ScramCredential | PlainCredential
"""A stored credential of either kind."""

PLAIN_WIRE_TYPE = 127
"""The mechanism byte AlterUserScramCredentials carries for a PLAIN credential: a groupcoord extension (Kafka's are
1 and 2 for SCRAM-SHA-256 and SCRAM-SHA-512, and Kafka refuses any other), so ``groupcoord users`` manages PLAIN
users over the same API."""


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


@dataclass(frozen=True)
class SaltedPassword:
    """What a client sends to set a credential (AlterUserScramCredentials): a salt, the iterations and
    Hi(password, salt, iterations), from which the server derives the stored credential; never the password."""

    salt: bytes
    salted: bytes = field(repr=False)
    iterations: int


def salt_password(mechanism: str, password: str, iterations: int) -> SaltedPassword:
    """Salt ``password`` for ``mechanism`` with a random 32-byte salt (PLAIN uses PBKDF2-HMAC-SHA-512)."""
    check_iterations(iterations)
    salt = secrets.token_bytes(32)
    hash_name = PLAIN_HASH if mechanism == PLAIN_MECHANISM else ScramMechanism.named(mechanism).hash_name
    return SaltedPassword(salt, hashlib.pbkdf2_hmac(hash_name, password.encode("utf-8"), salt, iterations), iterations)


def credential_from_salted(mechanism: str, salted: SaltedPassword) -> Credential:
    """The stored credential of a salted password for ``mechanism``."""
    if mechanism == PLAIN_MECHANISM:
        return PlainCredential(salted.salt, salted.salted, salted.iterations)
    return credential_from_salted_password(ScramMechanism.named(mechanism), salted.salted, salted.salt,
                                           salted.iterations)
