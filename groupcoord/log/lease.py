"""Coordinator election: a lease row in a Delta table, taken and renewed by conditional commits.

The lease table (``StateRoot.lease_path``) always holds exactly one row: every commit *overwrites* the table at
an expected version with ``max_commit_retries=0``, so taking, renewing and releasing are compare-and-set operations,
the role ZooKeeper played in the seeds. The Delta version of the commit is the lease's ``version``; a holder's next
renewal must commit right after it, so any other commit (a taker) deposes the holder.

Timing (``lease.*`` keys, :class:`~groupcoord.log.config.LeaseConfig`):

- taking or renewing at ``now`` sets ``expiry = now + lease.timeout.ms``;
- the holder may serve only while ``now < expiry - lease.safety.ms`` (:meth:`HeldLease.may_serve`), so a holder
  that failed to renew stops answering before anyone may take over;
- a taker may take an unreleased lease only once ``now >= expiry + lease.safety.ms``; a released lease is free at
  once (its holder stopped serving before releasing).

Members and tools find the coordinator with :func:`current_holder`. The table's schema is in
``docs/state-tables.md``.
"""

from __future__ import annotations

import datetime as dt
import logging
import uuid
from dataclasses import dataclass, replace
from pathlib import Path

import pyarrow as pa
from deltalake import CommitProperties, write_deltalake
from deltalake.exceptions import DeltaError

from groupcoord.log.base import LogFencedError, StorageUnavailableError
from groupcoord.log.config import LeaseConfig
from groupcoord.log.delta import classified_errors
from groupcoord.state_root import StateRoot
from groupcoord.storage.commits import COMMIT_ID_KEY
from groupcoord.storage.location import TableLocation, as_location
from groupcoord.storage.tables import holds_commit, is_table, open_table, table_dataset, table_properties

log = logging.getLogger("groupcoord.log.lease")

LEASE_SCHEMA = pa.schema(
    [
        pa.field("epoch", pa.int64(), nullable=False),
        pa.field("holder", pa.string(), nullable=False),
        pa.field("address", pa.string(), nullable=False),
        pa.field("expiry", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("renewed_at", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("released", pa.bool_(), nullable=False),
    ]
)
"""The lease table's columns (one row)."""

_NO_RETRY = CommitProperties(max_commit_retries=0)


class LeaseLostError(Exception):
    """The holder's lease was taken by someone else (or the table moved under it): stop serving at once."""


def utc_now() -> dt.datetime:
    """The current wall-clock time, timezone-aware UTC (leases are compared across processes)."""
    return dt.datetime.now(dt.UTC)


@dataclass(frozen=True)
class LeaseInfo:
    """The lease row as read at table ``version``; ``live`` says whether it was unexpired and unreleased at read."""

    epoch: int
    holder: str
    address: str
    expiry: dt.datetime
    renewed_at: dt.datetime
    released: bool
    version: int
    live: bool

    def is_live(self, now: dt.datetime) -> bool:
        """True while the lease is held: not released and not yet expired at ``now``."""
        return not self.released and now < self.expiry

    def free_at(self, safety: dt.timedelta) -> dt.datetime:
        """When a taker may take this lease: at once if released, else ``safety`` after expiry."""
        return self.renewed_at if self.released else self.expiry + safety


@dataclass(frozen=True)
class HeldLease:
    """A lease this process holds. Each successful renewal returns a new one; keep the latest."""

    info: LeaseInfo
    safety: dt.timedelta

    @property
    def epoch(self) -> int:
        """The holder's epoch (strictly above every earlier holder's): stamp it on the record log."""
        return self.info.epoch

    @property
    def serve_until(self) -> dt.datetime:
        """The end of the window in which the holder may answer group APIs, unless it renews first."""
        return self.info.expiry - self.safety

    def may_serve(self, now: dt.datetime) -> bool:
        """True while the holder may answer group APIs (heartbeats included) at ``now``."""
        return not self.info.released and now < self.serve_until


class LeaseTable:
    """The election lease at ``path``; every operation is a conditional commit or a read of the latest row."""

    def __init__(self, path: str | Path | TableLocation, *, config: LeaseConfig | None = None) -> None:
        self.config = config or LeaseConfig()
        # On object storage a request is retried for at most lease.safety.ms (and one renewal interval): a renewal
        # that outlived the holder's serving window by more could let it serve after a taker may take the lease.
        self.path = as_location(path).with_retry_timeout(
            min(self.config.safety_ms, self.config.renew_interval_ms) / 1000)

    @property
    def timeout(self) -> dt.timedelta:
        """``lease.timeout.ms`` as a duration."""
        return dt.timedelta(milliseconds=self.config.timeout_ms)

    @property
    def safety(self) -> dt.timedelta:
        """``lease.safety.ms`` as a duration."""
        return dt.timedelta(milliseconds=self.config.safety_ms)

    def read_current(self, now: dt.datetime | None = None) -> LeaseInfo | None:
        """The current lease row, or ``None`` when no one ever took the lease."""
        now = now or utc_now()
        with classified_errors(f"reading the lease {self.path}"):
            if not is_table(self.path):
                return None
            table = open_table(self.path)
            rows = table_dataset(table).to_table().to_pylist()
        if len(rows) != 1:
            raise StorageUnavailableError(f"lease table {self.path} holds {len(rows)} rows instead of one")
        row = rows[0]
        info = LeaseInfo(
            epoch=row["epoch"],
            holder=row["holder"],
            address=row["address"],
            expiry=row["expiry"],
            renewed_at=row["renewed_at"],
            released=row["released"],
            version=table.version(),
            live=False,
        )
        return replace(info, live=info.is_live(now))

    def try_acquire(self, holder: str, address: str, now: dt.datetime | None = None) -> HeldLease | None:
        """Take the lease with the next epoch if it is free at ``now``; ``None`` if it is held or the race was lost.

        A lease is free when it never existed, was released, or expired at least ``lease.safety.ms`` ago.
        """
        now = now or utc_now()
        current = self.read_current(now)
        if current is not None and now < current.free_at(self.safety):
            return None
        epoch = 1 if current is None else current.epoch + 1
        info = LeaseInfo(epoch, holder, address, now + self.timeout, now, False, -1, True)
        try:
            version = self._commit(info, expected_version=-1 if current is None else current.version)
        except LogFencedError as exc:
            log.info("lost the race for lease epoch %d: %s", epoch, exc)
            return None
        log.info("took lease epoch %d as %s (%s) at version %d", epoch, holder, address, version)
        return HeldLease(replace(info, version=version), self.safety)

    def renew(self, lease: HeldLease, now: dt.datetime | None = None) -> HeldLease:
        """Extend ``lease`` to ``now + lease.timeout.ms``; raises :class:`LeaseLostError` if it was taken.

        :class:`StorageUnavailableError` means the outcome is unknown: keep serving only while
        :meth:`HeldLease.may_serve` allows, and retry.
        """
        now = now or utc_now()
        info = replace(lease.info, expiry=now + self.timeout, renewed_at=now)
        return HeldLease(replace(info, version=self._commit_as_holder(lease, info)), self.safety)

    def release(self, lease: HeldLease, now: dt.datetime | None = None) -> LeaseInfo:
        """Give the lease up so that a standby may take it at once. Stop serving before calling this."""
        now = now or utc_now()
        info = replace(lease.info, expiry=now, renewed_at=now, released=True, live=False)
        info = replace(info, version=self._commit_as_holder(lease, info))
        log.info("released lease epoch %d at version %d", info.epoch, info.version)
        return info

    def maintain(self, lease: HeldLease) -> HeldLease:
        """Vacuum superseded lease rows and clean expired Delta log entries, as the holder; returns the lease at
        its new version (vacuum commits take versions). Raises :class:`LeaseLostError` if someone else committed.
        """
        retention = self.config.retention_hours
        try:
            with classified_errors(f"vacuuming the lease {self.path}"):
                table = open_table(self.path)
                if table.version() != lease.info.version:
                    raise LogFencedError(f"lease is at version {table.version()}, held {lease.info.version}")
                table.vacuum(retention, dry_run=False, enforce_retention_duration=False, commit_properties=_NO_RETRY,
                             full=True)  # lite vacuum misses rows superseded before the latest checkpoint
                table.cleanup_metadata()
                version = table.version()
        except LogFencedError as exc:
            raise LeaseLostError(f"lease epoch {lease.epoch} was taken: {exc}") from exc
        return HeldLease(replace(lease.info, version=version), self.safety)

    def _commit_as_holder(self, lease: HeldLease, info: LeaseInfo) -> int:
        try:
            return self._commit(info, expected_version=lease.info.version)
        except LogFencedError as exc:
            raise LeaseLostError(f"lease epoch {lease.epoch} was taken: {exc}") from exc

    def _commit(self, info: LeaseInfo, *, expected_version: int) -> int:
        """Overwrite the lease row with ``info`` as Delta version ``expected_version + 1`` (compare-and-set).

        The commit carries a random ``groupcoord.commitId``: when delta-rs reports a conflict because the put's
        response was lost and its retry found the version (on object storage), the version holding this id is this
        commit, and it stands."""
        commit_id = uuid.uuid4().hex
        try:
            return self._write(info, expected_version=expected_version, commit_id=commit_id)
        except LogFencedError:
            with classified_errors(f"reading version {expected_version + 1} of the lease {self.path}"):
                mine = holds_commit(self.path, expected_version + 1, commit_id)
            if not mine:
                raise
        log.info("lease commit at version %d: its response was lost, and the version holds this commit",
                 expected_version + 1)
        return expected_version + 1

    def _write(self, info: LeaseInfo, *, expected_version: int, commit_id: str) -> int:
        properties = CommitProperties(max_commit_retries=0, custom_metadata={COMMIT_ID_KEY: commit_id})
        data = pa.Table.from_pylist(
            [
                {
                    "epoch": info.epoch,
                    "holder": info.holder,
                    "address": info.address,
                    "expiry": info.expiry,
                    "renewed_at": info.renewed_at,
                    "released": info.released,
                }
            ],
            schema=LEASE_SCHEMA,
        )
        with classified_errors(f"committing lease epoch {info.epoch} to {self.path}"):
            if expected_version < 0:
                try:
                    write_deltalake(
                        self.path.uri,
                        data,
                        mode="error",
                        name="groupcoord_lease",
                        configuration=table_properties(
                            checkpoint_interval=10, retention_hours=self.config.retention_hours
                        ),
                        commit_properties=properties,
                        storage_options=self.path.delta_options(),
                    )
                except DeltaError as exc:
                    if is_table(self.path):
                        raise LogFencedError(f"another process created {self.path} first") from exc
                    raise
                return 0
            table = open_table(self.path)
            if table.version() != expected_version:
                raise LogFencedError(f"lease is at version {table.version()}, expected {expected_version}")
            write_deltalake(table, data, mode="overwrite", commit_properties=properties)
            committed: int = table.version()
        if committed != expected_version + 1:
            raise LogFencedError(f"lease commit landed at version {committed}, expected {expected_version + 1}")
        return committed


def current_holder(root: StateRoot | str | Path, *, now: dt.datetime | None = None) -> LeaseInfo | None:
    """The coordinator lease of the state root ``root`` (``None`` if never taken); ``.live`` tells if it is held
    and ``.address`` is where its holder listens."""
    path = root.lease_path if isinstance(root, StateRoot) else StateRoot.open(root).lease_path
    return LeaseTable(path).read_current(now)
