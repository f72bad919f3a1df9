"""Timers as deferred handlers, keyed by deterministic strings (``heartbeat-<group>-<member>``, ``join-<group>``).

Scheduling under a key that is already scheduled replaces the old timer. Timers are soft state: after a load the
coordinator schedules them again. Due timers fire in deadline order (then scheduling order), each with its own
deadline as ``now``, so a long clock jump behaves like the time passing step by step.

Every heartbeat reschedules its member's session timer, so a replacement must cost nothing that lives on: a timer
moved later keeps its place in the heap and only takes the new deadline and handler (the old handler is released at
once); when its old place comes up, it moves to the new one. A cancelled timer, or one moved earlier, leaves a dead
entry that is dropped when it reaches the top, and the heap is rebuilt from the live timers once the dead entries
outnumber them (plus :data:`COMPACT_SLACK`). Before, every heartbeat pushed a new entry: while a live timer sat at the
top (a rebalance's ``overdue`` watch stays for a rebalance timeout), none of the dead ones behind it could go, 10,000
members piled up ~150,000 entries with their closures, and the collector's full passes over them stalled the loop for
a quarter of a second every few seconds (``bench/member_capacity.py``).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable

TimerOp = Callable[[int], None]
"""A deferred handler; it receives the time it fires at."""

COMPACT_SLACK = 1024
"""The heap is rebuilt from the live timers once it holds more than twice their number plus this many entries."""


def _cancelled(now_ms: int) -> None:
    """The handler of a cancelled timer (never run: it only releases the real handler's closure at once)."""


class _Timer:
    """One scheduled timer: when it fires (``deadline_ms``, ties by ``seq``) and where its heap entry sits."""

    __slots__ = ("cancelled", "deadline_ms", "key", "op", "queued_ms", "seq")

    def __init__(self, key: str, deadline_ms: int, seq: int, op: TimerOp) -> None:
        self.key = key
        self.deadline_ms = deadline_ms
        self.seq = seq
        self.op = op
        self.queued_ms = deadline_ms  # the deadline of its heap entry: never later than ``deadline_ms``
        self.cancelled = False


_Entry = tuple[int, int, _Timer]
"""A heap entry: ``(deadline, seq, timer)``; it is current while it equals the timer's own deadline and seq."""


class Timers:
    """A keyed timer queue."""

    def __init__(self) -> None:
        self._heap: list[_Entry] = []
        self._by_key: dict[str, _Timer] = {}
        self._seq = itertools.count()

    def schedule(self, key: str, deadline_ms: int, op: TimerOp) -> None:
        """Run ``op`` at ``deadline_ms``, replacing any timer under ``key``."""
        seq = next(self._seq)
        timer = self._by_key.get(key)
        if timer is not None and deadline_ms >= timer.queued_ms:
            # Moved later (every heartbeat): its heap entry surfaces early, and moves then (_settle).
            timer.deadline_ms, timer.seq, timer.op = deadline_ms, seq, op
            return
        self.cancel(key)
        timer = _Timer(key, deadline_ms, seq, op)
        self._by_key[key] = timer
        heapq.heappush(self._heap, (deadline_ms, seq, timer))
        if len(self._heap) > 2 * len(self._by_key) + COMPACT_SLACK:
            self._heap = [(t.deadline_ms, t.seq, t) for t in self._by_key.values()]
            for t in self._by_key.values():
                t.queued_ms = t.deadline_ms
            heapq.heapify(self._heap)

    def cancel(self, key: str) -> None:
        """Forget the timer under ``key`` (if any)."""
        timer = self._by_key.pop(key, None)
        if timer is not None:
            timer.cancelled = True
            timer.op = _cancelled  # release the handler's closure now, not when its entry reaches the top

    def deadline(self, key: str) -> int | None:
        """When the timer under ``key`` fires, or ``None``."""
        timer = self._by_key.get(key)
        return None if timer is None else timer.deadline_ms

    def keys(self) -> list[str]:
        """Scheduled keys, sorted."""
        return sorted(self._by_key)

    def next_deadline(self) -> int | None:
        """The earliest deadline, or ``None`` without timers."""
        self._settle()
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now_ms: int) -> tuple[int, TimerOp] | None:
        """Remove and return the earliest timer due at ``now_ms`` as ``(deadline, op)``, or ``None``."""
        self._settle()
        if not self._heap or self._heap[0][0] > now_ms:
            return None
        _, _, timer = heapq.heappop(self._heap)
        del self._by_key[timer.key]
        return timer.deadline_ms, timer.op

    def clear(self) -> None:
        """Drop every timer."""
        for timer in self._by_key.values():
            timer.cancelled, timer.op = True, _cancelled
        self._heap.clear()
        self._by_key.clear()

    def _settle(self) -> None:
        """Until the top entry is a live timer's current one: drop dead entries, move moved timers to their place."""
        heap = self._heap
        while heap:
            _, seq, timer = heap[0]
            if timer.cancelled:
                heapq.heappop(heap)
            elif seq != timer.seq:
                timer.queued_ms = timer.deadline_ms
                heapq.heapreplace(heap, (timer.deadline_ms, timer.seq, timer))
            else:
                return
