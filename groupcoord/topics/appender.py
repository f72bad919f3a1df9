"""Produce's group commit: concurrent Produce batches of a topic become one conditional Delta commit.

``appender.append(topic, partition, records)`` returns a :class:`concurrent.futures.Future` that resolves with the
batch's base offset once the commit holding it is committed (``asyncio.wrap_future`` awaits it from an event loop).

Batching is :mod:`groupcoord.storage.group_commit`'s, one per topic (the topic log is one Delta table, so one commit
per topic covers every partition), run on a committer thread of its own (batches come from any thread): one commit
in flight per topic; batches that arrive meanwhile wait and form the next commit, which also waits
``topics.produce.linger.ms`` after its first batch arrived and holds at most ``topics.produce.batch.records``
records (a larger batch commits alone). Within a commit, the batches of one partition keep their arrival order,
and each batch's records stay contiguous and in order.

The commit is :meth:`TopicLog.append_columns`', a topic log's commit with its many-writer semantics (see
:mod:`groupcoord.topics.topic_log`: conditional at the version read, renumbered and retried when another writer got
there first, not fsynced), so the CLI, the Python API and other processes can write the same topic log meanwhile,
and no writer loses or reorders another's records. A failed commit fails every batch it held.

Idempotent producers. A batch with a producer id is checked against :class:`ProducerStates` when its commit is
assembled (in arrival order, so two batches of one producer in one commit are checked against each other); a
duplicate resolves with the original's base offset and is not written again. A failed commit forgets the batches it
held, so the producer's retry is accepted.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass

from groupcoord.state_root import StateRoot
from groupcoord.storage.group_commit import GroupCommit, GroupCommitClosedError, run_in_thread
from groupcoord.topics.catalog import TopicCatalog
from groupcoord.topics.config import TopicsConfig
from groupcoord.topics.errors import TopicError, UnknownTopicOrPartitionError
from groupcoord.topics.producer_state import AppendedBatch, ProducerBatch, ProducerStates
from groupcoord.topics.record_columns import RecordColumns
from groupcoord.topics.topic_log import ProducerRecord, TopicLog, columns_of

log = logging.getLogger("groupcoord.topics.appender")

LOG_START_OFFSET = 0
"""Nothing is deleted from a topic log in this version, so every partition's log starts at offset 0."""


_resolving = threading.local()
"""The calls waiting for the end of the commit this committer thread is resolving (see :func:`after_results`)."""


def after_results(call: Callable[[], None]) -> None:
    """Run ``call`` once the committer thread calling this (from a future's callback) has resolved every future of
    its commit; at once when called anywhere else.

    For a waker called back by the futures of many requests: it wakes an event loop once per commit instead of
    once per future, and waking a loop mid-commit hands it the GIL until the committer gets it back.
    """
    deferred: list[Callable[[], None]] | None = getattr(_resolving, "calls", None)
    if deferred is None:
        call()
    else:
        deferred.append(call)


@contextlib.contextmanager
def _deferring_calls() -> Iterator[None]:
    deferred: list[Callable[[], None]] = []
    _resolving.calls = deferred
    try:
        yield
    finally:
        _resolving.calls = None
        for call in deferred:
            try:
                call()
            except Exception:  # one waker's failure must not keep the others' requests waiting
                log.exception("a call after a produce commit failed")


class AppenderClosedError(TopicError):
    """The appender was closed before this batch was committed."""


@dataclass(frozen=True)
class AppendResult:
    """Where a batch landed: its base offset, the partition's log-start offset (:data:`LOG_START_OFFSET`), and
    whether it was a duplicate."""

    base_offset: int
    log_start_offset: int
    duplicate: bool = False


@dataclass(eq=False)
class _Pending:
    partition: int
    records: RecordColumns
    producer: ProducerBatch | None
    future: Future[AppendResult]
    arrived: float
    entry: AppendedBatch | None = None
    duplicate: bool = False

    @property
    def size(self) -> int:
        return len(self.records)


@dataclass(frozen=True)
class CommitStats:
    """Counters of one appender: Delta commits made and batches they held (for tests and benchmarks)."""

    commits: int
    batches: int


class TopicAppender:
    """The Produce group commit of one state root (see the module docs). Thread-safe; :meth:`close` when done."""

    def __init__(self, root: StateRoot, *, catalog: TopicCatalog | None = None, config: TopicsConfig | None = None,
                 producers: ProducerStates | None = None) -> None:
        self._root = root
        self._config = config or (catalog.config if catalog is not None else TopicsConfig())
        self._catalog = catalog or TopicCatalog(root, config=self._config)
        self._producers = producers or ProducerStates()
        self._logs: dict[str, TopicLog] = {}
        self._groups: dict[str, GroupCommit[_Pending]] = {}
        self._threads: list[threading.Thread] = []
        # Partition counts read from the catalog. Topics are never deleted and only gain partitions, so a partition
        # below the count read is valid for good; only a partition beyond it costs a catalog read (a few ms, and
        # ``append`` runs on the endpoint's event loop).
        self._known_partitions: dict[str, int] = {}
        self._lock = threading.Lock()
        self._closed = False
        self._commits = 0
        self._batches = 0

    @property
    def stats(self) -> CommitStats:
        """Commits and batches so far."""
        with self._lock:
            return CommitStats(self._commits, self._batches)

    def append(self, topic: str, partition: int, records: Sequence[ProducerRecord] | RecordColumns, *,
               producer: ProducerBatch | None = None) -> Future[AppendResult]:
        """Queue ``records`` (one batch of ``topic``-``partition``, as records or as columns) for the next commit of
        ``topic``.

        The future fails with :class:`UnknownTopicOrPartitionError` at once for an unknown topic or partition, with
        a sequence error for an idempotent batch out of order, or with the commit's error.
        """
        future: Future[AppendResult] = Future()
        if not 0 <= partition < self._known_partitions.get(topic, 0):
            try:
                count = self._catalog.describe(topic).partitions
                self._known_partitions[topic] = count
                if not 0 <= partition < count:
                    raise UnknownTopicOrPartitionError(
                        f"Partition {partition} of topic '{topic}' does not exist (it has {count} partitions).")
            except TopicError as exc:
                future.set_exception(exc)
                return future
        try:
            columns = records if isinstance(records, RecordColumns) else columns_of(records)
            self._group(topic).submit(_Pending(partition, columns, producer, future, time.monotonic()))
        except GroupCommitClosedError:
            future.set_exception(AppenderClosedError("The topic appender is closed."))
        return future

    def close(self, timeout: float = 10.0) -> None:
        """Commit what is queued, stop the committer threads, and fail anything appended later."""
        with self._lock:
            self._closed = True
            groups, threads = list(self._groups.values()), list(self._threads)
        for group in groups:
            group.close(drain=True)
        for thread in threads:
            thread.join(timeout)

    def _group(self, topic: str) -> GroupCommit[_Pending]:
        with self._lock:
            if self._closed:
                raise GroupCommitClosedError("the topic appender is closed")
            group = self._groups.get(topic)
            if group is None:
                self._logs[topic] = TopicLog(self._root, topic, catalog=self._catalog, config=self._config)
                group = self._groups[topic] = GroupCommit(
                    f"groupcoord-produce-{topic}", linger_s=self._config.produce_linger_ms / 1000,
                    max_records=self._config.produce_batch_records)
                self._threads.append(run_in_thread(group, lambda batch: self._commit(topic, batch), fail=_fail))
            return group

    # --- the committer ------------------------------------------------------------------------------------------------

    def _commit(self, topic: str, batch: list[_Pending]) -> None:
        batch = [item for item in batch if item.future.set_running_or_notify_cancel()]  # a cancelled one is dropped
        accepted = self._check_producers(topic, batch)
        written = [item for item in accepted if not item.duplicate]
        try:
            bases = (self._logs[topic].append_columns([(item.partition, item.records) for item in written]).base_offsets
                     if written else ())
        except Exception as exc:  # every waiter learns the commit's failure, whatever it was
            log.warning("produce commit of %d batches to %s failed: %s", len(accepted), topic, exc)
            with _deferring_calls():
                for item in accepted:
                    if item.entry is not None and item.producer is not None and not item.duplicate:
                        self._producers.forget(topic, item.partition, item.producer, item.entry)
                    item.future.set_exception(exc)
            return
        base_of = {id(item): base for item, base in zip(written, bases, strict=True)}
        for item in written:
            if item.entry is not None:
                item.entry.base_offset = base_of[id(item)]
        with self._lock:
            self._commits += 1 if written else 0
            self._batches += len(accepted)
        with _deferring_calls():
            for item in accepted:
                if item.duplicate:  # the original is durable: an earlier commit, or this one (its entry is set above)
                    assert item.entry is not None and item.entry.base_offset is not None
                    base = item.entry.base_offset
                else:
                    base = base_of[id(item)]
                item.future.set_result(AppendResult(base, LOG_START_OFFSET, item.duplicate))

    def _check_producers(self, topic: str, batch: list[_Pending]) -> list[_Pending]:
        """The batches to commit (duplicates marked); sequence errors fail their batch's future at once."""
        accepted: list[_Pending] = []
        for item in batch:
            if item.producer is not None:
                try:
                    item.entry, item.duplicate = self._producers.accept(topic, item.partition, item.producer)
                except TopicError as exc:
                    item.future.set_exception(exc)
                    continue
            accepted.append(item)
        return accepted


def _fail(batch: list[_Pending], exc: BaseException) -> None:
    for item in batch:
        if not item.future.done():
            item.future.set_exception(exc)
