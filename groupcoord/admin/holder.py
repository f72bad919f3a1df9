"""Reaching the lease holder for an admin write, or becoming it for the duration of the write.

Admin tools never append to the record log themselves: a write goes over the wire to the coordinator that holds
the lease. When no one holds it, :func:`admin_session` starts a
:class:`~groupcoord.host.background.BackgroundCoordinator` in this process (without Spark), which takes the lease
with the next epoch, loads the log, serves the one write, and releases the lease on the way out.

A live holder is reached with the client security settings (``listener.security.protocol``, ``sasl.*``,
``ssl.*``); the holder this process becomes listens on loopback without SASL, TLS or ACLs: whoever can write the
state root is a super user anyway (docs/security.md).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from groupcoord.admin.wire import AdminClient
from groupcoord.config import Config
from groupcoord.config.binding import KeyedConfig, from_key
from groupcoord.log.lease import current_holder
from groupcoord.security.config import ClientSecurity
from groupcoord.state_root import StateRoot

log = logging.getLogger("groupcoord.admin.holder")

_LOOPBACK_ANY_PORT = "127.0.0.1:0"


@dataclass(frozen=True, kw_only=True)
class AdminConfig(KeyedConfig):
    """How long an admin write waits to take the lease and for the coordinator's answers."""

    lease_wait_ms: int = field(default=30000, metadata=from_key("admin.lease.wait.ms"))
    request_timeout_ms: int = field(default=30000, metadata=from_key("admin.request.timeout.ms"))


class AdminChangeError(RuntimeError):
    """The coordinator refused an admin change (a user's credential, an ACL); the message says why in one line."""


class CoordinatorUnreachableError(RuntimeError):
    """Neither the lease holder could be reached nor the lease taken; the message says why in one line."""


@contextmanager
def admin_session(root: StateRoot, config: Config) -> Iterator[AdminClient]:
    """An :class:`AdminClient` connected to the lease holder, which is this process if nobody else holds it."""
    from groupcoord.member.connection import ConnectionLostError

    settings = AdminConfig.from_config(config)
    lease = current_holder(root)
    if lease is not None and lease.live:
        try:
            client = AdminClient(lease.address, timeout_ms=settings.request_timeout_ms,
                                 security=ClientSecurity.from_config(config))
        except ConnectionLostError as exc:
            raise CoordinatorUnreachableError(
                f"the lease holder {lease.holder} at {lease.address} does not answer ({exc}); retry once its lease "
                f"expires at {lease.expiry.isoformat()}") from None
        with client:
            yield client
        return
    from groupcoord.host.background import BackgroundCoordinator, CoordinatorStartError

    log.info("no coordinator holds the lease of %s: taking it for this write", root.location)
    # This process holds the state root: its own loopback listener needs no authentication and checks no ACLs
    # (docs/security.md).
    local = config.with_values(**{"listener.security.protocol": "PLAINTEXT", "authorizer.enabled": "false"})
    coordinator = BackgroundCoordinator(root, local, listen=_LOOPBACK_ANY_PORT)
    try:
        address = coordinator.start(settings.lease_wait_ms / 1000)
    except CoordinatorStartError as exc:
        raise CoordinatorUnreachableError(str(exc)) from None
    try:
        with AdminClient(address, timeout_ms=settings.request_timeout_ms) as client:
            yield client
    finally:
        coordinator.stop()
