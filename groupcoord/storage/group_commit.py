"""Group commit: many concurrent writes to one log become few commits, one commit in flight at a time.

A :class:`GroupCommit` owns a queue and one committer thread. :meth:`GroupCommit.submit` queues a write, from any
thread; the committer takes the writes at the head of the queue when a batch closes and hands them to the log's
``commit`` function, which makes them durable (or fails them) and answers their waiters. Writes that arrive while a
commit is in flight wait, and form the next batch. Both logs write through one: the record log's commit batcher
(:mod:`groupcoord.log.batcher`) and each topic's Produce group commit (:mod:`groupcoord.topics.appender`).

When a batch closes: ``linger_s`` after its oldest write arrived, but no sooner than ``min_interval_s`` after the
previous commit started (a log that retries a commit restarts that clock, :meth:`GroupCommit.commit_started`), which
caps the commit rate at one per ``min_interval_s``. What it holds: ``take`` says how many writes of the head of the
queue form the batch; by default, the writes in arrival order up to ``max_records`` records (a larger write commits
alone).

Stopping. :meth:`GroupCommit.close` stops taking writes: with ``drain`` the queued ones are still committed (without
waiting for the linger), otherwise they are handed back for the caller to fail; a commit in flight always finishes.
A ``commit`` that raises stops the committer for good (a fenced log): the batch and every queued write go to
``fail`` with that error, and later submits are refused with it.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
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
    """The queue and committer thread of one log (see the module docs). Thread-safe.

    ``commit(batch)`` runs in the committer thread, one batch at a time; ``fail(writes, error)`` is called with the
    writes that will never be committed (on a stop, from the committer thread); ``take(queue)`` (under :attr:`lock`)
    returns how many writes of the head of ``queue`` form the next batch, at least one.
    """

    def __init__(self, name: str, commit: Callable[[list[W]], None], *,
                 fail: Callable[[list[W], BaseException], None], linger_s: float, min_interval_s: float = 0.0,
                 max_records: int | None = None, take: Callable[[Sequence[W]], int] | None = None,
                 on_exit: Callable[[], None] | None = None) -> None:
        self.name = name
        self.linger_s = linger_s
        self.min_interval_s = min_interval_s
        self.max_records = max_records
        self.lock = threading.Lock()
        """Held while the queue changes and while ``take`` runs: a log may hold it to read its own commit state
        consistently with the queue (what is queued, what is in flight)."""
        self._commit = commit
        self._fail = fail
        self._take = take or self._take_up_to_max_records
        self._on_exit = on_exit
        self._wakeup = threading.Condition(self.lock)
        self._queue: deque[W] = deque()
        self._in_flight: list[W] = []
        self._thread: threading.Thread | None = None
        self._closed = False
        self._stopped: BaseException | None = None
        self._exited = False
        self._last_start = float("-inf")

    @property
    def pending(self) -> int:
        """Writes queued and not yet taken into a commit."""
        return len(self._queue)

    @property
    def stopped(self) -> BaseException | None:
        """The error a commit raised, which stopped the committer for good (``None`` while it runs)."""
        return self._stopped

    def queued(self) -> Sequence[W]:
        """The writes queued, in order (call it holding :attr:`lock` for a view consistent with the commit state)."""
        return tuple(self._queue)

    def submit(self, write: W) -> None:
        """Queue ``write`` for the next batch. Raises the error that stopped the committer, or
        :class:`GroupCommitClosedError` after :meth:`close`."""
        with self.lock:
            if self._stopped is not None:
                raise self._stopped
            if self._closed:
                raise GroupCommitClosedError(f"{self.name} is closed")
            self._queue.append(write)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()
            elif len(self._queue) == 1:  # the committer waits for a first write only when the queue is empty
                self._wakeup.notify()

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
            self._wakeup.notify_all()
            idle = self._thread is None and not self._exited
            self._exited = self._exited or idle
        if idle and self._on_exit is not None:
            self._on_exit()
        return dropped

    def join(self, timeout: float | None = None) -> None:
        """Wait for the committer thread to end (after :meth:`close`, once the queue is drained)."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)

    # --- the committer ------------------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            while (batch := self._next_batch()) is not None:
                try:
                    self._commit(batch)
                except BaseException as exc:  # the log stops: every write not yet answered fails with the error
                    self._stop(batch, exc)
                    return
                finally:
                    with self.lock:
                        self._in_flight = []
        finally:
            with self.lock:
                self._exited = True
            if self._on_exit is not None:
                self._on_exit()

    def _next_batch(self) -> list[W] | None:
        """Wait until a batch closes and take it (``None`` once closed and drained)."""
        with self.lock:
            while True:
                if not self._queue:
                    if self._closed:
                        return None
                    self._wakeup.wait()
                    continue
                due = max(self._queue[0].arrived + self.linger_s, self._last_start + self.min_interval_s)
                wait = due - time.monotonic()
                if wait <= 0 or self._closed:
                    break
                self._wakeup.wait(wait)  # wakes early only on close; the loop re-checks either way
            count = max(1, self._take(self._queue))
            self._in_flight = [self._queue.popleft() for _ in range(min(count, len(self._queue)))]
            self._last_start = time.monotonic()
            return list(self._in_flight)

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

    def _stop(self, batch: list[W], exc: BaseException) -> None:
        with self.lock:
            self._stopped = exc
            rest, self._queue = list(self._queue), deque()
        self._fail([*batch, *rest], exc)
