"""The client side of SASL PLAIN and SCRAM, for groupcoord's own clients (the member client, the admin client).

:func:`sasl_client` gives an object whose :meth:`~SaslClient.first` token starts the exchange and whose
:meth:`~SaslClient.next` answers each server token; SCRAM checks the server's signature at the end, so a server
that does not hold the credential is refused too.
"""

from __future__ import annotations

import base64
import hmac
import secrets
from typing import Protocol

from groupcoord.security.credentials import PLAIN_MECHANISM
from groupcoord.security.errors import AuthenticationFailed
from groupcoord.security.scram import ScramMechanism


class SaslClient(Protocol):
    """One client exchange."""

    def first(self) -> bytes:
        """The initial token."""

    def next(self, challenge: bytes) -> bytes | None:
        """The answer to ``challenge``; ``None`` when the exchange is over."""


class PlainClient:
    """PLAIN: one token, ``NUL user NUL password``."""

    def __init__(self, username: str, password: str) -> None:
        self._token = f"\0{username}\0{password}".encode()

    def first(self) -> bytes:
        """The only token."""
        return self._token

    def next(self, challenge: bytes) -> bytes | None:
        """Nothing more to send."""
        return None


def _sasl_name(username: str) -> str:
    return username.replace("=", "=3D").replace(",", "=2C")


class ScramClient:
    """SCRAM-SHA-256/512 without channel binding, as Kafka's clients speak it."""

    def __init__(self, mechanism: ScramMechanism, username: str, password: str) -> None:
        self._mechanism = mechanism
        self._password = password.encode("utf-8")
        self._nonce = base64.b64encode(secrets.token_bytes(24)).decode("ascii")
        self._bare = f"n={_sasl_name(username)},r={self._nonce}"
        self._server_signature: bytes | None = None

    def first(self) -> bytes:
        """``n,,n=user,r=nonce``."""
        return f"n,,{self._bare}".encode()

    def next(self, challenge: bytes) -> bytes | None:
        """The client-final message after server-first; after server-final, check its signature."""
        if self._server_signature is None:
            return self._final(challenge.decode("utf-8"))
        text = challenge.decode("utf-8")
        if not text.startswith("v=") or not hmac.compare_digest(base64.b64decode(text[2:]), self._server_signature):
            raise AuthenticationFailed("the server's SCRAM signature does not match: it does not hold the credential")
        return None

    def _final(self, server_first: str) -> bytes:
        fields = dict(part.split("=", 1) for part in server_first.split(","))
        nonce, salt, iterations = fields["r"], base64.b64decode(fields["s"]), int(fields["i"])
        if not nonce.startswith(self._nonce):
            raise AuthenticationFailed("the server's SCRAM nonce does not extend the client's")
        mechanism = self._mechanism
        salted = mechanism.salted_password(self._password, salt, iterations)
        client_key = mechanism.hmac(salted, b"Client Key")
        without_proof = f"c=biws,r={nonce}"
        auth_message = f"{self._bare},{server_first},{without_proof}".encode()
        signature = mechanism.hmac(mechanism.digest(client_key), auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self._server_signature = mechanism.hmac(mechanism.hmac(salted, b"Server Key"), auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode('ascii')}".encode()


def sasl_client(mechanism: str, username: str, password: str) -> SaslClient:
    """The client exchange of ``mechanism`` for ``username``."""
    if mechanism == PLAIN_MECHANISM:
        return PlainClient(username, password)
    return ScramClient(ScramMechanism.named(mechanism), username, password)
