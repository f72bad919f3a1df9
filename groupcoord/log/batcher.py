"""The commit batcher: turns many concurrent writes into few conditional commits, and acknowledges only durable ones.

``await batcher.append(records)`` resolves with the log version once the batch holding ``records`` is durable.

Batching. One commit is in flight at a time; writes that arrive meanwhile queue up and form the next batch. A batch
closes ``log.linger.ms`` after its first write arrived, but no sooner than ``log.min.commit.interval.ms`` after the
previous commit *started*, which caps the commit rate at 1000 / min interval per second. The commit itself (a
blocking Delta write) runs off the event loop in an executor.

Failures.

- :class:`LogFencedError`: another coordinator wrote. Every waiter, in flight or queued, fails with it, and the
  batcher stops for good (:attr:`CommitBatcher.fenced`); the coordinator must step down.
- :class:`StorageUnavailableError`: the waiters of that batch fail with it at once (the caller answers
  COORDINATOR_NOT_AVAILABLE) and :attr:`CommitBatcher.healthy` turns false, so the runtime can refuse new writes.
  The batch itself stays at the head of the queue: the core already applied its records, so it must reach the log,
  in order, before anything produced later. The batcher retries it with exponential backoff, and before each retry
  re-reads the log: every batch carries a unique ``batch_id`` (epoch + counter + random), and if that id already
  landed the commit was durable after all, so it is never committed twice. A commit after ``expected_version`` that
  is not this batch means another writer: fenced.

Snapshots (:meth:`CommitBatcher.snapshot`) and maintenance (:meth:`CommitBatcher.run_exclusive`) take the commit slot
in queue order, so they see every earlier batch committed and no later one. A snapshot does not get a commit of its
own: the writes queued behind it are committed in the same commit, after it (``RecordLog.write_snapshot``'s
``tail``). At the commit target a snapshot every ~20 commits otherwise cost every write that arrived meanwhile one
extra minimum commit interval, and one commit per second above the commit-rate cap. The writes still queued *ahead*
of a snapshot (not yet in a commit) join that commit too, in the tail, before the writes behind it: a snapshot holds
the state after every write submitted before it, so replaying those writes after it changes nothing (every record
sets or deletes its key, and the last write of a key before the snapshot is the snapshot's value), while a commit
of their own made the writes behind the snapshot wait two minimum commit intervals (the slowest 1 % of
acknowledgements at the commit target were all such writes: 82 ms of waiting before their commit began). A
snapshot's data file is written ahead, while the commit before it is in flight (:meth:`RecordLog.prepare` with
the version the snapshot expects), so its commit writes only the tail and links the commit file.
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

log = logging.getLogger("groupcoord.log.batcher")

_PREPARE = ThreadPoolExecutor(1, thread_name_prefix="groupcoord-log-prepare")
"""Runs :meth:`RecordLog.prepare` for snapshots (at normal priority: a commit may be about to wait for it)."""

_T = TypeVar("_T")


class BatcherClosedError(Exception):
    """The batcher was closed (shutdown or step-down) before this write was committed."""


@dataclass(frozen=True, kw_only=True)
class BatcherConfig:
    """Batching and retry timing; :meth:`from_log_config` takes the ``log.*`` keys."""

    linger_ms: int = 5
    min_commit_interval_ms: int = 50
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


@dataclass(eq=False)
class _Batch:
    kind: Kind
    entries: list[_Entry]
    batch_id: str
    records: list[EncodedRecord] = field(default_factory=list)
    """The writes of the batch (for a snapshot batch: those committed after the snapshot)."""
    snapshot: Sequence[EncodedRecord] = ()
    closed: float = 0.0
    prepared: asyncio.Future[Sequence[EncodedRecord]] | None = None
    """The snapshot's records as :meth:`RecordLog.prepare` returns them, when that is under way."""


class CommitBatcher:
    """Serializes all writes to one :class:`RecordLog` starting after ``version`` (the loaded or taken-over version).

    Create it inside a running event loop, after :meth:`RecordLog.takeover`; it stamps ``log.epoch`` in batch ids.
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
        self._queue: list[_Entry] = []
        self._wakeup = asyncio.Event()
        self._fenced: LogFencedError | None = None
        self._closed = False
        self._healthy = True
        self._last_commit_start = float("-inf")
        self._in_flight: Kind | None = None
        self._ids = itertools.count()
        self._token = uuid.uuid4().hex[:12]
        self.commits = 0
        """Commits made (data batches, snapshots and exclusive actions)."""
        self._task = asyncio.get_running_loop().create_task(self._run(), name="groupcoord-commit-batcher")

    # --- public API ---------------------------------------------------------------------------------------------

    @property
    def version(self) -> int:
        """The log version of the last durable commit this batcher knows of."""
        return self._version

    @property
    def healthy(self) -> bool:
        """False from a storage failure until the next successful commit: refuse new writes meanwhile."""
        return self._healthy and self._fenced is None

    @property
    def fenced(self) -> LogFencedError | None:
        """The error that deposed this writer, if any; the batcher has stopped."""
        return self._fenced

    @property
    def pending(self) -> int:
        """Writes queued and not yet committed."""
        return len(self._queue)

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
        self._closed = True
        if not drain:
            self._fail_queued(BatcherClosedError("commit batcher closed"))
        self._wakeup.set()
        await asyncio.shield(self._task)

    def _expected_next_version(self) -> int | None:
        """The version a snapshot queued now will commit at if every commit ahead of it succeeds: right after the
        commit in flight (the writes queued ahead join its commit). ``None`` when an exclusive action or another
        snapshot is ahead (their version counts are not known in advance)."""
        if self._in_flight == "exclusive" or any(entry.kind != "records" for entry in self._queue):
            return None
        return self._version + (self._in_flight is not None) + 1

    # --- the loop -----------------------------------------------------------------------------------------------

    def _submit(
        self, kind: Kind, records: Sequence[EncodedRecord], action: Callable[[int], int] | None = None, *,
        prepared: asyncio.Future[Sequence[EncodedRecord]] | None = None,
    ) -> asyncio.Future[int]:
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        if self._fenced is not None:
            future.set_exception(self._fenced)
        elif self._closed:
            future.set_exception(BatcherClosedError("commit batcher closed"))
        else:
            self._queue.append(_Entry(kind, records, future, self._now(), action, prepared))
            self._wakeup.set()
        return future

    async def _run(self) -> None:
        while True:
            if not self._queue:
                if self._closed:
                    return
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            close_at = max(
                self._queue[0].arrived + self.config.linger_ms / 1000,
                self._last_commit_start + self.config.min_commit_interval_ms / 1000,
            )
            delay = close_at - self._now()
            if delay > 0:
                await asyncio.sleep(delay)
                continue  # re-check: asyncio may wake a little early, and more may have queued
            batch = self._next_batch()
            self._in_flight = batch.kind
            try:
                await self._commit(batch)
            except LogFencedError as exc:
                self._stop_fenced(exc, batch)
                return
            finally:
                self._in_flight = None

    def _next_batch(self) -> _Batch:
        """The head of the queue: an exclusive action alone, or a run of writes, with the snapshot that ends the
        run (if any) and the writes after it up to the next snapshot or exclusive action (see the module docs)."""
        head = self._queue[0]
        if head.kind == "exclusive":
            entries, self._queue = self._queue[:1], self._queue[1:]
            return _Batch("exclusive", entries, self._batch_id(), closed=self._now())
        ends = [i for i, entry in enumerate(self._queue) if entry.kind != "records"] + [len(self._queue)]
        at = ends[0]
        if at < len(self._queue) and self._queue[at].kind == "snapshot":
            count = ends[1]
        else:
            at, count = -1, at
        entries, self._queue = self._queue[:count], self._queue[count:]
        batch = _Batch("records", entries, self._batch_id(), closed=self._now())
        if at >= 0:
            snapshot = entries[at]
            batch.kind, batch.snapshot, batch.prepared = "snapshot", snapshot.records, snapshot.prepared
        for entry in entries:
            if entry.kind == "records":
                batch.records.extend(entry.records)
        return batch

    def _batch_id(self) -> str:
        return f"{self.log.epoch}-{self._token}-{next(self._ids)}"

    async def _commit(self, batch: _Batch) -> None:
        """Commit ``batch`` until it is durable (retrying storage failures) or the writer is fenced."""
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
                started = self._last_commit_start = self._now()
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

    def _report_timing(self, batch: _Batch, version: int, started: float, written: float) -> None:
        assert self.on_commit is not None
        self.on_commit(CommitTiming(
            version=version, kind=batch.kind, writes=len(batch.entries), records=len(batch.records),
            first_arrival=min(entry.arrived for entry in batch.entries), closed=batch.closed, started=started,
            written=written, resolved=self._now(), phases=self.log.last_commit_phases))

    def _timed_write(self, batch: _Batch, expected: int) -> tuple[int, float]:
        version = self._write(batch, expected)
        return version, self._now()

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

    @staticmethod
    def _fail(entries: Sequence[_Entry], exc: BaseException) -> None:
        for entry in entries:
            if not entry.future.done():
                entry.future.set_exception(exc)

    def _fail_queued(self, exc: BaseException) -> None:
        queued, self._queue = self._queue, []
        self._fail(queued, exc)

    def _stop_fenced(self, exc: LogFencedError, batch: _Batch) -> None:
        log.error("commit batcher fenced at version %d: %s", self._version, exc)
        self._fenced = exc
        self._fail(batch.entries, exc)
        self._fail_queued(exc)

    # --- helpers ------------------------------------------------------------------------------------------------

    async def _in_executor(self, call: Callable[[], _T]) -> _T:
        return await asyncio.get_running_loop().run_in_executor(self._executor, call)

    @staticmethod
    def _now() -> float:
        return time.monotonic()
