"""Users for SASL: reading them from the state root, and changing them through the lease holder.

:func:`stored_users` replays the record log's credential records (read-only, like ``groups describe``); changes go
over the wire as AlterUserScramCredentials to the lease holder, or to this process holding the lease for the write
(:func:`groupcoord.admin.holder.admin_session`), which is how the first user is created: through the state root.
"""

from __future__ import annotations

from collections.abc import Sequence

from groupcoord.admin.holder import AdminChangeError, admin_session
from groupcoord.admin.stored import stored_records
from groupcoord.config import Config
from groupcoord.coordinator.credential_records import USER_CREDENTIAL_KIND, decode_credential_record
from groupcoord.protocol.errors import ErrorCode
from groupcoord.security.credentials import Credentials, SaltedPassword, salt_password
from groupcoord.state_root import StateRoot


class UserChangeError(AdminChangeError):
    """The coordinator refused a change of a user's credentials; the message is Kafka's reason in one line."""


def stored_users(root: StateRoot) -> Credentials:
    """Every user's credentials as the record log holds them now."""
    credentials = Credentials()
    for key, payload in stored_records(root, USER_CREDENTIAL_KIND):
        record = decode_credential_record(key, payload)
        if record.value is None:
            credentials.remove(record.user, record.mechanism)
        else:
            credentials.put(record.user, record.mechanism, record.value)
    return credentials


def add_user(root: StateRoot, config: Config, user: str, mechanism: str, password: str, iterations: int) -> None:
    """Set ``user``'s credential for ``mechanism`` from ``password`` (salted here: no password leaves this
    process)."""
    _change(root, config, user, [(mechanism, salt_password(mechanism, password, iterations))])


def remove_user(root: StateRoot, config: Config, user: str, mechanisms: Sequence[str]) -> None:
    """Delete ``user``'s credentials for ``mechanisms``."""
    _change(root, config, user, [(mechanism, None) for mechanism in mechanisms])


def _change(root: StateRoot, config: Config, user: str,
            changes: Sequence[tuple[str, SaltedPassword | None]]) -> None:
    with admin_session(root, config) as client:
        for mechanism, salted in changes:
            error, message = client.alter_credentials(user, mechanism, salted)
            _check(user, mechanism, error, message)


def _check(user: str, mechanism: str, error: ErrorCode, message: str) -> None:
    if error.is_error:
        raise UserChangeError(f"{mechanism} credential of user '{user}' refused: {error.name}"
                              f"{f' ({message})' if message else ''}")
