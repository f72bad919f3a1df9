"""The record log's commit batcher: the core's writes become few conditional commits, acknowledged once durable.

``await batcher.append(records)`` resolves with the log version once the batch holding ``records`` is durable.

Batching is :mod:`groupcoord.storage.group_commit`'s, run on the event loop that created the batcher (where the
core's writes come from): one commit in flight at a time; writes that arrive meanwhile queue up and form the next
batch, which closes ``log.linger.ms`` after its first write arrived, but no sooner than
``log.min.commit.interval.ms`` after the previous commit *started* (a cap of 1000 / min interval commits per
second). The commit itself (a blocking Delta write) runs off the event loop in an executor.

The record log's semantics on top:

- One writer, fenced: every batch commits at the version after the previous one. :class:`LogFencedError` means
  another coordinator wrote: every waiter, in flight or queued, fails with it, and the batcher stops for good
  (:attr:`CommitBatcher.fenced`); the coordinator must step down.
- Nothing acknowledged before it is durable, nothing written twice, nothing reordered.
  :class:`StorageUnavailableError`: the waiters of that batch fail with it at once (the caller answers
  COORDINATOR_NOT_AVAILABLE) and :attr:`CommitBatcher.healthy` turns false, so the runtime can refuse new writes.
  The batch itself stays in flight: the core already applied its records, so it must reach the log, in order,
  before anything produced later. The batcher retries it with exponential backoff, and before each retry re-reads
  the log: every batch carries a unique ``batch_id`` (epoch + counter + random), and if that id already landed the
  commit was durable after all, so it is never committed twice. A commit after the expected version that is not
  this batch means another writer: fenced.
- Snapshots (:meth:`CommitBatcher.snapshot`) and exclusive actions such as maintenance
  (:meth:`CommitBatcher.run_exclusive`) take the commit slot in queue order, so they see every earlier batch
  committed and no later one. An exclusive action commits alone. A snapshot does not get a commit of its own: the
  writes queued ahead of it (not yet in a commit) and behind it, up to the next snapshot or exclusive action, are
  committed in the same commit, after it (``RecordLog.write_snapshot``'s ``tail``). Replaying the writes queued
  ahead after the snapshot changes nothing: the snapshot holds the state after every write submitted before it,
  and every record sets or deletes its key. A snapshot's per-record work (:meth:`RecordLog.prepare`, with the
  version the snapshot is expected at: its data file) runs in a thread while the commits ahead of it are in flight,
  so its commit writes only the tail and links the commit file.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import random
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from groupcoord.coordinator.encoded import EncodedRecord
from groupcoord.log.base import LogFencedError, RecordLog, StorageUnavailableError
from groupcoord.log.config import LogConfig
from groupcoord.storage.group_commit import GroupCommit, GroupCommitClosedError, run_on_loop

log = logging.getLogger("groupcoord.log.batcher")

_PREPARE = ThreadPoolExecutor(1, thread_name_prefix="groupcoord-log-prepare")
"""Runs :meth:`RecordLog.prepare` for snapshots (at normal priority: a commit may be about to wait for it)."""

_T = TypeVar("_T")


class BatcherClosedError(Exception):
    """The batcher was closed (shutdown or step-down) before this write was committed."""


@dataclass(frozen=True, kw_only=True)
class BatcherConfig:
    """Batching and retry timing; :meth:`from_log_config` takes the ``log.*`` keys."""

    linger_ms: int = 0
    min_commit_interval_ms: int = 0
    retry_backoff_ms: int = 50
    retry_backoff_max_ms: int = 2000

    @classmethod
    def from_log_config(cls, config: LogConfig) -> BatcherConfig:
        """Linger and minimum commit interval from ``config``; backoff starts at the minimum commit interval."""
        return cls(
            linger_ms=config.linger_ms,
            min_commit_interval_ms=config.min_commit_interval_ms,
            retry_backoff_ms=max(config.min_commit_interval_ms, 10),
        )


Kind = Literal["records", "snapshot", "exclusive"]


@dataclass(frozen=True, kw_only=True)
class CommitTiming:
    """Where one successful commit's time went, for latency breakdowns (``time.monotonic()`` instants).

    ``first_arrival``: the oldest write of the batch arrived; ``closed``: the batch closed (after the linger and
    the minimum commit interval); ``started``: its commit began (a snapshot's after waiting for
    :meth:`RecordLog.prepare`; a retried commit's at its last attempt); ``written``: the log's commit call
    returned, in the executor thread (durable); ``resolved``: the event loop resolved the waiters' futures.
    ``phases``: the log's own split of the commit (:attr:`RecordLog.last_commit_phases`, seconds; empty for logs
    that do not measure).
    """

    version: int
    kind: Kind
    writes: int
    records: int
    first_arrival: float
    closed: float
    started: float
    written: float
    resolved: float
    phases: Mapping[str, float]


@dataclass(eq=False)
class _Entry:
    kind: Kind
    records: Sequence[EncodedRecord]
    future: asyncio.Future[int]
    arrived: float
    action: Callable[[int], int] | None = None
    prepared: asyncio.Future[Sequence[EncodedRecord]] | None = None

    @property
    def size(self) -> int:
        return len(self.records)


@dataclass(eq=False)
class _Batch:
    kind: Kind
    entries: list[_Entry]
    batch_id: str
    closed: float
    records: list[EncodedRecord] = field(default_factory=list)
    """The writes of the batch (for a snapshot batch: those committed after the snapshot)."""
    snapshot: Sequence[EncodedRecord] = ()
    prepared: asyncio.Future[Sequence[EncodedRecord]] | None = None
    """The snapshot's records as :meth:`RecordLog.prepare` returns them, when that is under way."""


class CommitBatcher:
    """Serializes all writes to one :class:`RecordLog` starting after ``version`` (the loaded or taken-over version).

    Create it inside a running event loop, after :meth:`RecordLog.takeover`, and write to it from that loop; it
    stamps ``log.epoch`` in batch ids.
    """

    def __init__(
        self,
        record_log: RecordLog,
        *,
        version: int,
        config: BatcherConfig | None = None,
        executor: Executor | None = None,
        on_commit: Callable[[CommitTiming], None] | None = None,
    ) -> None:
        self.log = record_log
        self.on_commit = on_commit
        """Called on the event loop with the :class:`CommitTiming` of every successful commit (benchmarks)."""
        self.config = config or BatcherConfig()
        self._executor = executor
        self._version = version
        self._fenced: LogFencedError | None = None
        self._healthy = True
        self._in_flight: Kind | None = None
        self._ids = itertools.count()
        self._token = uuid.uuid4().hex[:12]
        self.commits = 0
        """Commits made (data batches, snapshots and exclusive actions)."""
        self._group: GroupCommit[_Entry] = GroupCommit(
            "groupcoord-commit-batcher", take=self._take, linger_s=self.config.linger_ms / 1000,
            min_interval_s=self.config.min_commit_interval_ms / 1000)
        self._task = asyncio.get_running_loop().create_task(
            run_on_loop(self._group, self._commit, fail=self._fail), name="groupcoord-commit-batcher")

    # --- public API ---------------------------------------------------------------------------------------------

    @property
    def version(self) -> int:
        """The log version of the last durable commit this batcher knows of."""
        return self._version

    @property
    def healthy(self) -> bool:
        """False from a storage failure until the next successful commit: refuse new writes meanwhile."""
        return self._healthy and self._group.stopped is None

    @property
    def fenced(self) -> LogFencedError | None:
        """The error that deposed this writer, if any; the batcher has stopped."""
        return self._fenced

    @property
    def pending(self) -> int:
        """Writes queued and not yet committed."""
        return self._group.pending

    async def append(self, records: Sequence[EncodedRecord]) -> int:
        """Wait until ``records`` are durable in the log and return the version of the commit holding them."""
        return await self._submit("records", records)

    async def snapshot(self, records: Sequence[EncodedRecord]) -> int:
        """Commit ``records`` as a snapshot after every write queued before it; returns its version.

        The snapshot takes its place in the queue at once; its per-record work (:meth:`RecordLog.prepare`) runs
        in a thread meanwhile, so the commit that carries it, and the writes folded into it, do not wait for it.
        """
        prepared = asyncio.get_running_loop().run_in_executor(
            _PREPARE, functools.partial(self.log.prepare, records, version=self._expected_next_version()))
        return await self._submit("snapshot", records, prepared=prepared)

    async def run_exclusive(self, action: Callable[[int], int]) -> int:
        """Run ``action(expected_version) -> new_version`` in the commit slot (in the executor), e.g. maintenance
        commits; it must raise :class:`LogFencedError` if someone else committed. Returns the new version."""
        return await self._submit("exclusive", (), action)

    async def close(self, *, drain: bool = True) -> None:
        """Stop the batcher. With ``drain`` queued writes are committed first; otherwise they fail with
        :class:`BatcherClosedError`. A commit already in flight always finishes."""
        self._fail(self._group.close(drain=drain), BatcherClosedError("commit batcher closed"))
        await asyncio.shield(self._task)

    def _expected_next_version(self) -> int | None:
        """The version a snapshot queued now will commit at if every commit ahead of it succeeds: right after the
        commit in flight (the writes queued ahead join its commit). ``None`` when an exclusive action or another
        snapshot is ahead (their version counts are not known in advance)."""
        if self._in_flight == "exclusive" or any(entry.kind != "records" for entry in self._group.queued()):
            return None
        return self._version + (self._in_flight is not None) + 1

    # --- committing (on the loop; the writes in the executor) ---------------------------------------------------

    def _submit(
        self, kind: Kind, records: Sequence[EncodedRecord], action: Callable[[int], int] | None = None, *,
        prepared: asyncio.Future[Sequence[EncodedRecord]] | None = None,
    ) -> asyncio.Future[int]:
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        try:
            self._group.submit(_Entry(kind, records, future, time.monotonic(), action, prepared))
        except GroupCommitClosedError:
            future.set_exception(BatcherClosedError("commit batcher closed"))
        except LogFencedError as exc:
            future.set_exception(exc)
        return future

    def _take(self, queue: Sequence[_Entry]) -> int:
        """How many entries of the head of ``queue`` the next commit holds: an exclusive action alone, or a run of
        writes, with the snapshot that ends the run (if any) and the writes after it up to the next snapshot or
        exclusive action (see the module docs)."""
        self._in_flight = "exclusive" if queue[0].kind == "exclusive" else "records"
        if queue[0].kind == "exclusive":
            return 1
        ends = [i for i, entry in enumerate(queue) if entry.kind != "records"] + [len(queue)]
        if ends[0] < len(queue) and queue[ends[0]].kind == "snapshot":
            return ends[1]
        return ends[0]

    def _batch(self, entries: list[_Entry]) -> _Batch:
        batch = _Batch(entries[0].kind if entries[0].kind == "exclusive" else "records", entries,
                       f"{self.log.epoch}-{self._token}-{next(self._ids)}", closed=time.monotonic())
        for entry in entries:
            if entry.kind == "records":
                batch.records.extend(entry.records)
            elif entry.kind == "snapshot":
                batch.kind, batch.snapshot, batch.prepared = "snapshot", entry.records, entry.prepared
        return batch

    async def _commit(self, entries: list[_Entry]) -> None:
        """Commit one batch until it is durable (retrying storage failures) or the writer is fenced (raised: the
        group commit then stops and fails everything queued)."""
        try:
            await self._commit_batch(self._batch(entries))
        except LogFencedError as exc:
            log.error("commit batcher fenced at version %d: %s", self._version, exc)
            self._fenced = exc
            raise
        finally:
            self._in_flight = None

    async def _commit_batch(self, batch: _Batch) -> None:
        expected = self._version
        backoff = self.config.retry_backoff_ms / 1000
        outcome_unknown = False
        if batch.prepared is not None:
            try:
                batch.snapshot = await batch.prepared
            except Exception as exc:  # the commit prepares them itself then
                log.warning("preparing a snapshot of %d records failed: %r", len(batch.snapshot), exc)
        while True:
            try:
                if outcome_unknown:
                    landed = await self._in_executor(lambda: self._landed(batch, expected))
                    if landed is not None:
                        self._succeed(batch, landed)
                        return
                started = time.monotonic()
                self._group.commit_started()
                version, written = await self._in_executor(lambda: self._timed_write(batch, expected))
            except StorageUnavailableError as exc:
                if batch.kind == "exclusive":
                    self._fail(batch.entries, exc)
                    self._version = await self._in_executor(lambda: self._resync_after_exclusive(expected))
                    return
                log.warning("commit of batch %s at version %d failed, will retry: %s", batch.batch_id,
                            expected + 1, exc)
                self._healthy = False
                self._fail(batch.entries, exc)
                outcome_unknown = True
                await asyncio.sleep(backoff * random.uniform(0.8, 1.2))
                backoff = min(backoff * 2, self.config.retry_backoff_max_ms / 1000)
                continue
            self._succeed(batch, version)
            if self.on_commit is not None:
                self._report_timing(batch, version, started, written)
            return

    def _timed_write(self, batch: _Batch, expected: int) -> tuple[int, float]:
        version = self._write(batch, expected)
        return version, time.monotonic()

    def _write(self, batch: _Batch, expected: int) -> int:
        if batch.kind == "exclusive":
            action = batch.entries[0].action
            assert action is not None
            return action(expected)
        if batch.kind == "snapshot":
            return self.log.write_snapshot(batch.snapshot, expected_version=expected, batch_id=batch.batch_id,
                                           tail=batch.records)
        return self.log.append(batch.records, expected_version=expected, batch_id=batch.batch_id)

    def _landed(self, batch: _Batch, expected: int) -> int | None:
        """After an unknown outcome: the version ``batch`` landed at, or ``None`` if nothing was committed since.

        Raises :class:`LogFencedError` when someone else committed after ``expected``, and
        :class:`StorageUnavailableError` when the log cannot be read (the caller backs off and looks again).
        """
        ids = self.log.batch_ids_after(expected)
        if not ids:
            return None
        ours = [version for version, tag in ids.items() if tag == batch.batch_id]
        if ours and max(ids) == ours[0]:
            log.info("batch %s was durable at version %d despite the storage error", batch.batch_id, ours[0])
            return ours[0]
        raise LogFencedError(f"versions {sorted(ids)} after {expected} were written by another writer")

    def _resync_after_exclusive(self, expected: int) -> int:
        """After a failed exclusive action some of its (untagged) commits may have landed: adopt them."""
        try:
            ids = self.log.batch_ids_after(expected)
        except StorageUnavailableError:
            return expected
        if any(tag is not None for tag in ids.values()):
            raise LogFencedError(f"a tagged batch landed after {expected} during an exclusive action")
        return max(ids, default=expected)

    # --- outcomes -----------------------------------------------------------------------------------------------

    def _succeed(self, batch: _Batch, version: int) -> None:
        self._version = version
        self._healthy = True
        self.commits += 1
        for entry in batch.entries:
            if not entry.future.done():
                entry.future.set_result(version)

    def _report_timing(self, batch: _Batch, version: int, started: float, written: float) -> None:
        assert self.on_commit is not None
        self.on_commit(CommitTiming(
            version=version, kind=batch.kind, writes=len(batch.entries), records=len(batch.records),
            first_arrival=min(entry.arrived for entry in batch.entries), closed=batch.closed, started=started,
            written=written, resolved=time.monotonic(), phases=self.log.last_commit_phases))

    @staticmethod
    def _fail(entries: Sequence[_Entry], exc: BaseException) -> None:
        for entry in entries:
            if not entry.future.done():
                entry.future.set_exception(exc)

    async def _in_executor(self, call: Callable[[], _T]) -> _T:
        return await asyncio.get_running_loop().run_in_executor(self._executor, call)
