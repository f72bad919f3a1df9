"""SASL PLAIN (RFC 4616) with the password checked against a salted hash, never stored.

Kafka's PLAIN keeps passwords in its JAAS file; groupcoord keeps PBKDF2-HMAC-SHA-512 of the password with a random
salt in the state root instead, so the stored bytes do not reveal it. PLAIN sends the password itself, so use it over
TLS (SASL_SSL) only.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from groupcoord.security.errors import AuthenticationFailed, InvalidCredentials

PLAIN_HASH = "sha512"
PLAIN_ITERATIONS = 4096
"""PBKDF2 rounds of a PLAIN credential: each PLAIN authentication pays them once (a few milliseconds)."""


@dataclass(frozen=True)
class PlainCredential:
    """A PLAIN user's stored form: salt, iterations and PBKDF2-HMAC-SHA-512(password, salt)."""

    salt: bytes
    hashed: bytes
    iterations: int = PLAIN_ITERATIONS

    def matches(self, password: str) -> bool:
        """Whether ``password`` is this credential's (constant-time comparison)."""
        candidate = hashlib.pbkdf2_hmac(PLAIN_HASH, password.encode("utf-8"), self.salt, self.iterations)
        return hmac.compare_digest(candidate, self.hashed)


def new_plain_credential(password: str, *, salt: bytes | None = None) -> PlainCredential:
    """A fresh PLAIN credential for ``password`` with a random 32-byte salt (unless ``salt`` is given)."""
    salt = salt if salt is not None else secrets.token_bytes(32)
    return PlainCredential(salt, hashlib.pbkdf2_hmac(PLAIN_HASH, password.encode("utf-8"), salt, PLAIN_ITERATIONS))


PlainLookup = Callable[[str], PlainCredential | None]
"""Finds a PLAIN user's stored credential (``None``: no such user)."""


class PlainServer:
    """The server side of a PLAIN exchange: one message ``[authzid] NUL authcid NUL passwd``, an empty answer."""

    def __init__(self, lookup: PlainLookup) -> None:
        self._lookup = lookup
        self.username: str | None = None

    @property
    def complete(self) -> bool:
        """Whether the exchange succeeded."""
        return self.username is not None

    def evaluate(self, token: bytes) -> bytes:
        """Check the client's one message (Kafka's ``PlainSaslServer`` messages on failure)."""
        if self.username is not None:
            raise InvalidCredentials("unexpected PLAIN message after the exchange ended")
        try:
            authzid, authcid, password = token.decode("utf-8").split("\0")
        except (UnicodeDecodeError, ValueError):
            raise AuthenticationFailed(
                "Invalid SASL/PLAIN response: expected 3 tokens") from None
        if not authcid:
            raise AuthenticationFailed("Authentication failed: username not specified")
        if not password:
            raise AuthenticationFailed("Authentication failed: password not specified")
        credential = self._lookup(authcid)
        if credential is None or not credential.matches(password):
            raise AuthenticationFailed("Authentication failed: Invalid username or password")
        if authzid and authzid != authcid:
            raise AuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is different from username")
        self.username = authcid
        return b""
