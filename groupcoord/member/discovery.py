"""Finding the group's coordinator: through bootstrap servers, or through the lease table of a state root.

Either way the member then sends FindCoordinator (Kafka's lookup) to the address it found and connects to the
address the answer names, so a coordinator behind an advertised listener is reached the same way as a broker.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from groupcoord.log.lease import current_holder
from groupcoord.member.config import MemberOptions
from groupcoord.member.connection import BrokerConnection
from groupcoord.member.errors import CoordinatorUnavailableError
from groupcoord.member.wire import GroupClient
from groupcoord.protocol.errors import Errors
from groupcoord.state_root import StateRoot

log = logging.getLogger("groupcoord.member.discovery")

Address = tuple[str, int]


def bootstrap_candidates(servers: tuple[Address, ...]) -> Callable[[], list[Address]]:
    """Candidates for FindCoordinator: the bootstrap servers, in order."""
    return lambda: list(servers)


def lease_candidates(state_root: Path | StateRoot) -> Callable[[], list[Address]]:
    """Candidates for FindCoordinator: the live lease holder's advertised address (none while nobody holds it).
    ``state_root``: a local directory, or an opened root (one on S3 carries its storage settings)."""

    def candidates() -> list[Address]:
        try:
            lease = current_holder(state_root)
        except Exception as exc:  # storage hiccups: the caller backs off and tries again
            raise CoordinatorUnavailableError(f"cannot read the lease table of {state_root}: {exc}") from None
        if lease is None or not lease.live:
            return []
        host, _, port = lease.address.rpartition(":")
        return [(host.strip("[]"), int(port))]

    return candidates


class CoordinatorLocator:
    """Finds the coordinator of ``group_id`` and returns a connected :class:`GroupClient` to it."""

    def __init__(self, group_id: str, candidates: Callable[[], list[Address]], options: MemberOptions) -> None:
        self._group_id = group_id
        self._candidates = candidates
        self._options = options

    def _connect(self, address: Address) -> BrokerConnection:
        connection = BrokerConnection(address[0], address[1], client_id=self._options.client_id,
                                      timeout_ms=self._options.request_timeout_ms, security=self._options.security)
        connection.connect()
        return connection

    def locate(self) -> GroupClient:
        """A client connected to the coordinator; raises :class:`CoordinatorUnavailableError` when none answers."""
        problems: list[str] = []
        for address in self._candidates():
            try:
                return self._locate_via(address)
            except CoordinatorUnavailableError as exc:
                problems.append(str(exc))
        if not problems:
            problems.append("no live coordinator lease")
        raise CoordinatorUnavailableError(f"group {self._group_id}: no coordinator found ({'; '.join(problems)})")

    def _locate_via(self, address: Address) -> GroupClient:
        bootstrap = self._connect(address)
        try:
            error, host, port = GroupClient(bootstrap).find_coordinator(self._group_id)
        except BaseException:
            bootstrap.close()
            raise
        if error is not Errors.NONE:
            bootstrap.close()
            raise CoordinatorUnavailableError(f"FindCoordinator at {address[0]}:{address[1]} answered {error.name}")
        if (host, port) == address:
            log.info("group %s: coordinator is %s:%d", self._group_id, host, port)
            return GroupClient(bootstrap)
        bootstrap.close()
        log.info("group %s: coordinator is %s:%d (found via %s:%d)", self._group_id, host, port, *address)
        return GroupClient(self._connect((host, port)))
