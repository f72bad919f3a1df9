"""Group commit: many concurrent writes to one log become few commits, one commit in flight at a time.

A :class:`GroupCommit` is a log's queue of writes and the rules that cut it into batches; a runner takes each batch
when it closes and hands it to the log's ``commit`` function, which makes it durable (or fails it) and answers its
waiters. Writes that arrive while a commit is in flight wait, and form the next batch. Both logs write through one:
the record log's commit batcher (:mod:`groupcoord.log.batcher`) and each topic's Produce group commit
(:mod:`groupcoord.topics.appender`).

When a batch closes: ``linger_s`` after its oldest write arrived, but no sooner than ``min_interval_s`` after the
previous commit started (a log that retries a commit restarts that clock, :meth:`GroupCommit.commit_started`), which
caps the commit rate at one per ``min_interval_s``. What it holds: ``take`` says how many writes of the head of the
queue form the batch; by default, the writes in arrival order up to ``max_records`` records (a larger write commits
alone).

Stopping. :meth:`GroupCommit.close` stops taking writes: with ``drain`` the queued ones are still committed (without
waiting for the linger), otherwise they are handed back for the caller to fail; a commit in flight always finishes.
A ``commit`` that raises stops the log for good (a fenced log): the batch and every queued write go to ``fail`` with
that error, and later submits are refused with it.

Two runners, for where a log's writers are:

- :func:`run_on_loop`, for writers on one asyncio event loop (the core's writes, on the coordinator's loop): the
  batch closes on the loop, between its callbacks, so it holds every write the loop has made ready, and ``commit``
  is a coroutine (which runs the blocking commit in an executor);
- :func:`run_in_thread`, for writers on any thread (Produce's adapters, tests, tools): one committer thread per log.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, Protocol, TypeVar


class Queued(Protocol):
    """What the queue needs to know of a write."""

    @property
    def arrived(self) -> float:
        """When the write was submitted (``time.monotonic()``)."""

    @property
    def size(self) -> int:
        """How many records it holds (for ``max_records``)."""


W = TypeVar("W", bound=Queued)


class GroupCommitClosedError(Exception):
    """The group commit was closed before this write was queued."""


class GroupCommit(Generic[W]):
    """The queue and batching rules of one log (see the module docs); a runner commits its batches. Thread-safe.

    ``take(queue)`` (under :attr:`lock`) returns how many writes of the head of ``queue`` form the next batch, at
    least one.
    """

    def __init__(self, name: str, *, linger_s: float, min_interval_s: float = 0.0, max_records: int | None = None,
                 take: Callable[[Sequence[W]], int] | None = None) -> None:
        self.name = name
        self.linger_s = linger_s
        self.min_interval_s = min_interval_s
        self.max_records = max_records
        self.lock = threading.RLock()
        """Held while the queue changes and while ``take`` runs: a log may hold it to read its own commit state
        consistently with the queue (what is queued, what is in flight)."""
        self._take = take or self._take_up_to_max_records
        self._wake: Callable[[], None] = lambda: None
        self._queue: deque[W] = deque()
        self._in_flight = False
        self._closed = False
        self._stopped: BaseException | None = None
        self._last_start = float("-inf")

    @property
    def pending(self) -> int:
        """Writes queued and not yet taken into a commit."""
        return len(self._queue)

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called or a commit stopped the log."""
        return self._closed

    @property
    def stopped(self) -> BaseException | None:
        """The error a commit raised, which stopped the log for good (``None`` while it runs)."""
        return self._stopped

    def queued(self) -> Sequence[W]:
        """The writes queued, in order (call it holding :attr:`lock` for a view consistent with the commit state)."""
        return tuple(self._queue)

    def submit(self, write: W) -> None:
        """Queue ``write`` for the next batch. Raises the error that stopped the log, or
        :class:`GroupCommitClosedError` after :meth:`close`."""
        with self.lock:
            if self._stopped is not None:
                raise self._stopped
            if self._closed:
                raise GroupCommitClosedError(f"{self.name} is closed")
            self._queue.append(write)
            if len(self._queue) == 1:  # the runner waits for a first write only when the queue is empty
                self._wake()

    def wake_with(self, wake: Callable[[], None]) -> None:
        """For a runner: ``wake()`` is called, holding :attr:`lock`, when a first write is queued or the group
        closes."""
        self._wake = wake

    def commit_started(self) -> None:
        """Restart the minimum interval's clock: the log starts another attempt of the batch in flight."""
        self._last_start = time.monotonic()

    def close(self, *, drain: bool = True) -> list[W]:
        """Stop taking writes; returns the queued writes that will not be committed (none with ``drain``)."""
        with self.lock:
            self._closed = True
            dropped: list[W] = []
            if not drain:
                dropped, self._queue = list(self._queue), deque()
            self._wake()
        return dropped

    # --- for the runners ----------------------------------------------------------------------------------------

    def due(self) -> float | None:
        """When the next batch closes (``time.monotonic()``; at once when closing), ``None`` with nothing queued."""
        with self.lock:
            if not self._queue:
                return None
            if self._closed:
                return float("-inf")
            return max(self._queue[0].arrived + self.linger_s, self._last_start + self.min_interval_s)

    def take(self) -> list[W]:
        """Take the next batch off the queue (its commit is in flight until :meth:`finished`)."""
        with self.lock:
            count = max(1, self._take(self._queue))
            batch = [self._queue.popleft() for _ in range(min(count, len(self._queue)))]
            self._in_flight = True
            self._last_start = time.monotonic()
            return batch

    def finished(self) -> None:
        """The commit in flight ended."""
        with self.lock:
            self._in_flight = False

    def stop(self, batch: list[W], exc: BaseException) -> list[W]:
        """A commit of ``batch`` raised ``exc``: stop for good; returns every write to fail (the batch, the queue)."""
        with self.lock:
            self._stopped, self._closed, self._in_flight = exc, True, False
            rest, self._queue = list(self._queue), deque()
        return [*batch, *rest]

    def _take_up_to_max_records(self, queue: Sequence[W]) -> int:
        if self.max_records is None:
            return len(queue)
        count = records = 0
        for write in queue:
            if count and records + write.size > self.max_records:
                break
            count += 1
            records += write.size
        return count


async def run_on_loop(group: GroupCommit[W], commit: Callable[[list[W]], Awaitable[None]], *,
                      fail: Callable[[list[W], BaseException], None]) -> None:
    """Commit ``group``'s batches from the running event loop until it is closed and drained, or a commit raises
    (its error then goes to ``fail`` with every write not committed). Submit to ``group`` from this loop only."""
    wakeup = asyncio.Event()
    group.wake_with(wakeup.set)
    while True:
        due = group.due()
        if due is None:
            if group.closed:
                return
            wakeup.clear()
            await wakeup.wait()
            continue
        delay = due - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
            continue  # re-check: asyncio may wake a little early, and more may have queued
        batch = group.take()
        try:
            await commit(batch)
        except BaseException as exc:  # the log stops: every write not yet answered fails with the error
            fail(group.stop(batch, exc), exc)
            return
        finally:
            group.finished()


def run_in_thread(group: GroupCommit[W], commit: Callable[[list[W]], None], *,
                  fail: Callable[[list[W], BaseException], None]) -> threading.Thread:
    """Start ``group``'s committer thread: it commits batches until the group is closed and drained, or a commit
    raises (its error then goes to ``fail`` with every write not committed). Submit from any thread."""
    wakeup = threading.Condition(group.lock)
    group.wake_with(wakeup.notify_all)

    def next_batch() -> list[W] | None:
        with group.lock:
            while (due := group.due()) is None or due > time.monotonic():
                if due is None and group.closed:
                    return None
                wakeup.wait(None if due is None else due - time.monotonic())
            return group.take()

    def run() -> None:
        while (batch := next_batch()) is not None:
            try:
                commit(batch)
            except BaseException as exc:  # the log stops: every write not yet answered fails with the error
                fail(group.stop(batch, exc), exc)
                return
            finally:
                group.finished()

    thread = threading.Thread(target=run, name=group.name, daemon=True)
    thread.start()
    return thread
