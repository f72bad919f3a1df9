"""The record of a user's credential for one SASL mechanism, and its codec.

Kind ``user_credential``, key ``[user, mechanism]``; the value holds what the mechanism checks a login against,
never a password: for SCRAM (``SCRAM-SHA-256``, ``SCRAM-SHA-512``) the salt, StoredKey, ServerKey and iterations, as
Kafka stores them; for ``PLAIN`` a salt, the PBKDF2-HMAC-SHA-512 of the password and its iterations. A ``None``
value deletes the credential. Format 5 of the state root added this kind (:mod:`groupcoord.state_format`).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

from groupcoord.security.credentials import PLAIN_MECHANISM, Credential, check_credential_kind
from groupcoord.security.plain import PlainCredential
from groupcoord.security.scram import ScramCredential

USER_CREDENTIAL_KIND = "user_credential"


@dataclass(frozen=True)
class UserCredentialRecord:
    """``user``'s credential for ``mechanism`` (``value``), or its deletion (``value is None``)."""

    user: str
    mechanism: str
    value: Credential | None


def new_user_credential_record(user: str, mechanism: str, value: Credential) -> UserCredentialRecord:
    """The record storing ``user``'s credential for ``mechanism``."""
    check_credential_kind(mechanism, value)
    return UserCredentialRecord(user, mechanism, value)


def new_user_credential_tombstone(user: str, mechanism: str) -> UserCredentialRecord:
    """The record deleting ``user``'s credential for ``mechanism``."""
    return UserCredentialRecord(user, mechanism, None)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text.encode("ascii"), validate=True)


def credential_record_key(record: UserCredentialRecord) -> str:
    """The compaction key: ``[user, mechanism]`` as JSON."""
    return json.dumps([record.user, record.mechanism], separators=(",", ":"))


def credential_record_payload(record: UserCredentialRecord) -> dict[str, Any] | None:
    """The JSON value of ``record`` (``None`` for a tombstone)."""
    value = record.value
    if value is None:
        return None
    if isinstance(value, PlainCredential):
        return {"salt": _b64(value.salt), "hashed": _b64(value.hashed), "iterations": value.iterations}
    return {"salt": _b64(value.salt), "stored_key": _b64(value.stored_key), "server_key": _b64(value.server_key),
            "iterations": value.iterations}


def decode_credential_record(key: str, payload: dict[str, Any] | None) -> UserCredentialRecord:
    """The record stored under ``key`` with ``payload``; ``ValueError``/``KeyError`` when malformed."""
    user, mechanism = json.loads(key)
    if payload is None:
        return new_user_credential_tombstone(str(user), str(mechanism))
    value: Credential
    if mechanism == PLAIN_MECHANISM:
        value = PlainCredential(_unb64(payload["salt"]), _unb64(payload["hashed"]), int(payload["iterations"]))
    else:
        value = ScramCredential(salt=_unb64(payload["salt"]), stored_key=_unb64(payload["stored_key"]),
                                server_key=_unb64(payload["server_key"]), iterations=int(payload["iterations"]))
    return new_user_credential_record(str(user), str(mechanism), value)
