"""SCRAM (RFC 5802, RFC 7677) as Kafka uses it: the stored credential and the server side of an exchange.

A credential is what Kafka keeps for a SCRAM user (``kafka-configs --add-config SCRAM-SHA-256=[...]``): a salt,
an iteration count, StoredKey = H(HMAC(SaltedPassword, "Client Key")) and ServerKey = HMAC(SaltedPassword,
"Server Key"). Neither key gives the password back; StoredKey checks a client's proof, ServerKey signs the server's
last message so the client knows the server held the credential.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from groupcoord.security.errors import AuthenticationFailed, InvalidCredentials

MIN_ITERATIONS = 4096
"""Kafka's least iteration count for SCRAM-SHA-256 and SCRAM-SHA-512 (``ScramMechanism.minIterations``)."""

MAX_ITERATIONS = 16384
"""Kafka's greatest iteration count (``AlterUserScramCredentials`` refuses more)."""

DEFAULT_ITERATIONS = 8192
"""What ``groupcoord users add`` uses unless told (``kafka-configs`` uses 4096)."""


class ScramMechanism(Enum):
    """The two SCRAM mechanisms Kafka supports, with their hash and Kafka's wire number (AlterUserScramCredentials)."""

    SCRAM_SHA_256 = ("SCRAM-SHA-256", "sha256", 1)
    SCRAM_SHA_512 = ("SCRAM-SHA-512", "sha512", 2)

    @property
    def mechanism_name(self) -> str:
        """The SASL name (``SCRAM-SHA-256``)."""
        return self.value[0]

    @property
    def hash_name(self) -> str:
        """The :mod:`hashlib` name of its hash."""
        return self.value[1]

    @property
    def wire_type(self) -> int:
        """Kafka's ``ScramMechanism`` byte (1 for SHA-256, 2 for SHA-512)."""
        return self.value[2]

    @classmethod
    def named(cls, name: str) -> ScramMechanism:
        """The mechanism called ``name``; a ``ValueError`` naming the choices otherwise."""
        for mechanism in cls:
            if mechanism.mechanism_name == name.upper():
                return mechanism
        raise ValueError(f"unknown SCRAM mechanism {name!r}: expected SCRAM-SHA-256 or SCRAM-SHA-512")

    @classmethod
    def of_wire_type(cls, wire_type: int) -> ScramMechanism | None:
        """The mechanism with Kafka's number ``wire_type``, ``None`` for an unknown one."""
        return next((m for m in cls if m.wire_type == wire_type), None)

    def digest(self, data: bytes) -> bytes:
        """H(data)."""
        return hashlib.new(self.hash_name, data).digest()

    def hmac(self, key: bytes, data: bytes) -> bytes:
        """HMAC(key, data)."""
        return hmac.new(key, data, self.hash_name).digest()

    def salted_password(self, password: bytes, salt: bytes, iterations: int) -> bytes:
        """Hi(password, salt, i): PBKDF2 with HMAC of this hash."""
        return hashlib.pbkdf2_hmac(self.hash_name, password, salt, iterations)


@dataclass(frozen=True)
class ScramCredential:
    """What is stored for one user and SCRAM mechanism: never the password."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def check_iterations(iterations: int) -> None:
    """Raise ``ValueError`` unless ``iterations`` is within Kafka's 4096-16384."""
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ValueError(f"iterations must be between {MIN_ITERATIONS} and {MAX_ITERATIONS}, got {iterations}")


def credential_from_salted_password(mechanism: ScramMechanism, salted: bytes, salt: bytes,
                                    iterations: int) -> ScramCredential:
    """The credential of a SaltedPassword (what AlterUserScramCredentials sends: the client salts, the server
    never sees the password)."""
    client_key = mechanism.hmac(salted, b"Client Key")
    return ScramCredential(salt=salt, stored_key=mechanism.digest(client_key),
                           server_key=mechanism.hmac(salted, b"Server Key"), iterations=iterations)


def new_scram_credential(mechanism: ScramMechanism, password: str, *, iterations: int = DEFAULT_ITERATIONS,
                         salt: bytes | None = None) -> ScramCredential:
    """A fresh credential for ``password`` with a random 32-byte salt (unless ``salt`` is given)."""
    check_iterations(iterations)
    salt = salt if salt is not None else secrets.token_bytes(32)
    salted = mechanism.salted_password(password.encode("utf-8"), salt, iterations)
    return credential_from_salted_password(mechanism, salted, salt, iterations)


def sasl_name_to_username(sasl_name: str) -> str:
    """RFC 5802's saslname decoding: ``=2C`` is a comma and ``=3D`` an equals sign (any other ``=`` is invalid)."""
    if "=" in sasl_name.replace("=2C", "").replace("=3D", ""):
        raise InvalidCredentials("invalid username encoding in the SCRAM client first message")
    return sasl_name.replace("=2C", ",").replace("=3D", "=")


def _attributes(message: str) -> dict[str, str]:
    """``a=x,b=y`` as a dict (values may contain ``=``)."""
    found: dict[str, str] = {}
    for part in message.split(","):
        name, sep, value = part.partition("=")
        if not sep or len(name) != 1:
            raise InvalidCredentials("malformed SCRAM message")
        found.setdefault(name, value)
    return found


@dataclass(frozen=True)
class ClientFirst:
    """The client's first message: its username, requested authorization id, nonce and the bare part it signs."""

    username: str
    authorization_id: str
    nonce: str
    bare: str

    @classmethod
    def parse(cls, token: bytes) -> ClientFirst:
        """Read ``n,[a=authzid],n=name,r=nonce[,ext...]``; channel binding is refused, as Kafka does."""
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidCredentials("SCRAM client first message is not UTF-8") from None
        gs2, sep, rest = text.partition(",")
        authz, sep2, bare = rest.partition(",")
        if not sep or not sep2 or gs2 != "n":
            raise InvalidCredentials("invalid SCRAM client first message (channel binding is not supported)")
        if authz and not authz.startswith("a="):
            raise InvalidCredentials("invalid authorization id in the SCRAM client first message")
        attributes = _attributes(bare)
        if "n" not in attributes or "r" not in attributes or not bare.startswith("n="):
            raise InvalidCredentials("invalid SCRAM client first message")
        return cls(username=sasl_name_to_username(attributes["n"]),
                   authorization_id=sasl_name_to_username(authz[2:]) if authz else "",
                   nonce=attributes["r"], bare=bare)


CredentialLookup = Callable[[str], ScramCredential | None]
"""Finds a user's stored credential for one mechanism (``None``: no such user)."""


class ScramServer:
    """The server side of one SCRAM exchange: client-first, server-first, client-final, server-final.

    ``lookup(username)`` gives the stored credential (``None``: unknown user, which fails at once, as in Kafka).
    :meth:`evaluate` raises :class:`AuthenticationFailed` on any failure; :attr:`username` is set once complete.
    """

    def __init__(self, mechanism: ScramMechanism, lookup: CredentialLookup) -> None:
        self.mechanism = mechanism
        self._lookup = lookup
        self._first: ClientFirst | None = None
        self._server_first = ""
        self._credential: ScramCredential | None = None
        self.username: str | None = None

    @property
    def complete(self) -> bool:
        """Whether the exchange succeeded."""
        return self.username is not None

    def evaluate(self, token: bytes) -> bytes:
        """The answer to the client's next message."""
        if self._first is None:
            return self._on_client_first(token)
        if self.username is None and self._credential is not None:
            return self._on_client_final(token)
        raise InvalidCredentials("unexpected SCRAM message after the exchange ended")

    def _on_client_first(self, token: bytes) -> bytes:
        first = ClientFirst.parse(token)
        credential = self._lookup(first.username)
        if credential is None:
            raise InvalidCredentials("Authentication failed: Invalid user credentials")
        if first.authorization_id and first.authorization_id != first.username:
            raise AuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is different from username")
        if credential.iterations < MIN_ITERATIONS:
            raise InvalidCredentials(f"Iterations {credential.iterations} is less than the minimum {MIN_ITERATIONS}")
        self._first, self._credential = first, credential
        nonce = first.nonce + base64.b64encode(secrets.token_bytes(24)).decode("ascii").replace("/", "-")
        salt = base64.b64encode(credential.salt).decode("ascii")
        self._server_first = f"r={nonce},s={salt},i={credential.iterations}"
        return self._server_first.encode("utf-8")

    def _on_client_final(self, token: bytes) -> bytes:
        assert self._first is not None and self._credential is not None
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidCredentials("SCRAM client final message is not UTF-8") from None
        without_proof, sep, proof_part = text.rpartition(",p=")
        attributes = _attributes(without_proof) if sep else {}
        nonce = self._server_first.split(",", 1)[0][2:]
        if not sep or attributes.get("r") != nonce or attributes.get("c") != "biws":
            raise InvalidCredentials("Invalid client nonce or channel binding in the final client message.")
        try:
            proof = base64.b64decode(proof_part, validate=True)
        except ValueError:
            raise InvalidCredentials("Invalid client proof") from None
        auth_message = f"{self._first.bare},{self._server_first},{without_proof}".encode()
        signature = self.mechanism.hmac(self._credential.stored_key, auth_message)
        if len(proof) != len(signature):
            raise InvalidCredentials("Invalid client proof")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(self.mechanism.digest(client_key), self._credential.stored_key):
            raise InvalidCredentials("Invalid client credentials")
        server_signature = self.mechanism.hmac(self._credential.server_key, auth_message)
        self.username = self._first.username
        self._credential = None
        return b"v=" + base64.b64encode(server_signature)

