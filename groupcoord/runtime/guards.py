"""Wrappers the host puts around the log and the core: crash points, and refusing writes while storage is down."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from groupcoord.coordinator import GroupCoordinator
from groupcoord.coordinator.encoded import EncodedRecord
from groupcoord.coordinator.result import CoordinatorResult
from groupcoord.log.base import LoadedLog, RecordLog
from groupcoord.protocol.errors import Errors, ProtocolError
from groupcoord.protocol.requests import (
    AlterAclsRequest,
    AlterCredentialsRequest,
    DeleteGroupsRequest,
    GroupRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    SyncGroupRequest,
)
from groupcoord.runtime.crash_points import crash_point
from groupcoord.security.acl_store import AclStore

WRITE_REQUESTS = (
    JoinGroupRequest, SyncGroupRequest, LeaveGroupRequest, OffsetCommitRequest, OffsetDeleteRequest,
    DeleteGroupsRequest, AlterCredentialsRequest, AlterAclsRequest,
)
"""Requests that may produce records: refused while storage is unavailable, so nothing is half-acknowledged."""


class CrashPointLog(RecordLog):
    """Delegates to ``inner``, passing the ``before-commit`` and ``after-commit`` crash points on each append."""

    def __init__(self, inner: RecordLog) -> None:
        self.inner = inner
        self.epoch = inner.epoch  # wrap only after takeover: the epoch no longer changes

    def version(self) -> int:
        """The wrapped log's version."""
        return self.inner.version()

    def append(self, records: Sequence[EncodedRecord], *, expected_version: int, batch_id: str | None = None) -> int:
        """Append through the wrapped log, between the two crash points."""
        crash_point("before-commit")
        version = self.inner.append(records, expected_version=expected_version, batch_id=batch_id)
        crash_point("after-commit")
        return version

    def write_snapshot(
        self, records: Sequence[EncodedRecord], *, expected_version: int, batch_id: str | None = None,
        tail: Sequence[EncodedRecord] = (),
    ) -> int:
        """Write a snapshot through the wrapped log; with a ``tail`` (writes to acknowledge) between the two crash
        points, as an append."""
        if tail:
            crash_point("before-commit")
        version = self.inner.write_snapshot(records, expected_version=expected_version, batch_id=batch_id, tail=tail)
        if tail:
            crash_point("after-commit")
        return version

    def batch_ids_after(self, version: int) -> dict[int, str | None]:
        """The wrapped log's batch tags after ``version``."""
        return self.inner.batch_ids_after(version)

    def load(self) -> LoadedLog:
        """Load the wrapped log."""
        return self.inner.load()


class WriteGuard:
    """The core as the service sees it: writes are refused with COORDINATOR_NOT_AVAILABLE while ``healthy()`` is
    false (heartbeats and reads still pass), and a SyncGroup passes the ``rebalance`` crash point."""

    def __init__(self, core: GroupCoordinator, healthy: Callable[[], bool]) -> None:
        self.core = core
        self._healthy = healthy

    def handle(self, request: GroupRequest, now_ms: int, token: object) -> CoordinatorResult:
        """Check storage health for writes, then hand ``request`` to the core."""
        if isinstance(request, WRITE_REQUESTS) and not self._healthy():
            raise ProtocolError(Errors.COORDINATOR_NOT_AVAILABLE)
        if isinstance(request, SyncGroupRequest):
            crash_point("rebalance")
        return self.core.handle(request, now_ms, token)

    def advance(self, now_ms: int) -> CoordinatorResult:
        """Fire due timers."""
        return self.core.advance(now_ms)

    @property
    def acls(self) -> AclStore:
        """The core's ACLs (read-only), for the authorization layer and the ACL APIs."""
        return self.core.acls
