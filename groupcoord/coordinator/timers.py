"""Timers as deferred handlers, keyed by deterministic strings (``heartbeat-<group>-<member>``, ``join-<group>``).

Scheduling under a key that is already scheduled replaces the old timer. Timers are soft state: after a load the
coordinator schedules them again. Due timers fire in deadline order (then scheduling order), each with its own
deadline as ``now``, so a long clock jump behaves like the time passing step by step.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

TimerOp = Callable[[int], None]
"""A deferred handler; it receives the time it fires at."""


@dataclass(order=True)
class _Entry:
    deadline_ms: int
    seq: int
    key: str = field(compare=False)
    op: TimerOp = field(compare=False)
    cancelled: bool = field(default=False, compare=False)


class Timers:
    """A keyed timer queue."""

    def __init__(self) -> None:
        self._heap: list[_Entry] = []
        self._by_key: dict[str, _Entry] = {}
        self._seq = itertools.count()

    def schedule(self, key: str, deadline_ms: int, op: TimerOp) -> None:
        """Run ``op`` at ``deadline_ms``, replacing any timer under ``key``."""
        self.cancel(key)
        entry = _Entry(deadline_ms, next(self._seq), key, op)
        self._by_key[key] = entry
        heapq.heappush(self._heap, entry)

    def cancel(self, key: str) -> None:
        """Forget the timer under ``key`` (if any)."""
        entry = self._by_key.pop(key, None)
        if entry is not None:
            entry.cancelled = True

    def deadline(self, key: str) -> int | None:
        """When the timer under ``key`` fires, or ``None``."""
        entry = self._by_key.get(key)
        return None if entry is None else entry.deadline_ms

    def keys(self) -> list[str]:
        """Scheduled keys, sorted."""
        return sorted(self._by_key)

    def next_deadline(self) -> int | None:
        """The earliest deadline, or ``None`` without timers."""
        self._drop_cancelled()
        return self._heap[0].deadline_ms if self._heap else None

    def pop_due(self, now_ms: int) -> tuple[int, TimerOp] | None:
        """Remove and return the earliest timer due at ``now_ms`` as ``(deadline, op)``, or ``None``."""
        self._drop_cancelled()
        if not self._heap or self._heap[0].deadline_ms > now_ms:
            return None
        entry = heapq.heappop(self._heap)
        del self._by_key[entry.key]
        return entry.deadline_ms, entry.op

    def clear(self) -> None:
        """Drop every timer."""
        self._heap.clear()
        self._by_key.clear()

    def _drop_cancelled(self) -> None:
        while self._heap and self._heap[0].cancelled:
            heapq.heappop(self._heap)
