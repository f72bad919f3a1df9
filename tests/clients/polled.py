"""A consumer of an in-process Python client, driven by a thread of its own.

Kafka's consumers are single-threaded: one thread polls, and only that thread may commit or read committed offsets.
:class:`PolledMember` runs the poll loop on a daemon thread and hands other calls to it through a queue, so a
scenario can wait on several members at once. Subclasses provide the client's calls (:meth:`poll_once`,
:meth:`owned`, :meth:`commit_now`, :meth:`committed_now`, :meth:`close_now`).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")


class PolledMember:
    """A :class:`~tests.clients.scenarios.Member` whose client calls run on its poll thread."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._owned: frozenset[int] = frozenset()
        self._assignments = 0
        self._calls: queue.Queue[tuple[Callable[[], Any], Future[Any]]] = queue.Queue()
        self._stopped = threading.Event()
        self._held = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"client-{name}", daemon=True)

    def start(self) -> None:
        """Start polling."""
        self._thread.start()

    # --- what a subclass provides (all on the poll thread) -----------------------------------------------------
    def poll_once(self) -> None:
        """One poll of the consumer (a short wait for records, group work meanwhile)."""
        raise NotImplementedError

    def owned(self) -> frozenset[int]:
        """The partitions the consumer owns now."""
        raise NotImplementedError

    def commit_now(self, offsets: Mapping[int, int]) -> None:
        """A synchronous commit; raises the client's error."""
        raise NotImplementedError

    def committed_now(self, partitions: list[int]) -> dict[int, int | None]:
        """The committed offsets of ``partitions``."""
        raise NotImplementedError

    def close_now(self) -> None:
        """Close the consumer."""
        raise NotImplementedError

    # --- the Member interface ------------------------------------------------------------------------------------
    def assigned(self) -> None:
        """Count one assignment (called from the client's rebalance callback)."""
        self._assignments += 1

    def assignment(self) -> frozenset[int]:
        """The partitions owned as of the last poll."""
        return self._owned

    def assignments(self) -> int:
        """How many assignments the client reported."""
        return self._assignments

    def commit(self, offsets: Mapping[int, int]) -> str | None:
        """Commit on the poll thread; the error's class name and message, or ``None``."""
        try:
            self.call(lambda: self.commit_now(offsets))
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"
        return None

    def committed(self, partitions: Iterable[int]) -> dict[int, int | None]:
        """Committed offsets, read on the poll thread."""
        wanted = list(partitions)
        return self.call(lambda: self.committed_now(wanted))

    def hold(self) -> None:
        """Poll no more (calls still run on the poll thread); set on the poll thread, so no poll is under way after."""
        self.call(self._held.set)

    def close(self) -> None:
        """Close on the poll thread, then stop it."""
        if not self._stopped.is_set():
            self.call(self.close_now)
            self._stopped.set()
            self._thread.join(timeout=30)

    def call(self, action: Callable[[], T], timeout_s: float = 60.0) -> T:
        """Run ``action`` on the poll thread and return its result (or raise its error)."""
        future: Future[T] = Future()
        self._calls.put((action, future))
        return future.result(timeout=timeout_s)

    def _loop(self) -> None:
        failure: BaseException | None = None
        while not self._stopped.is_set():
            if failure is None and not self._held.is_set():
                try:
                    self.poll_once()
                    self._owned = self.owned()
                except Exception as exc:  # a fatal client error (fenced): keep answering calls
                    failure = exc
            try:
                polling = failure is None and not self._held.is_set()
                action, future = self._calls.get(timeout=0.01 if polling else 0.1)
            except queue.Empty:
                continue
            try:
                future.set_result(action())
            except Exception as exc:
                future.set_exception(exc)
            if action == self.close_now:
                return
