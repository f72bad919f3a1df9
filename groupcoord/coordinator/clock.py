"""Injected time: the coordinator never reads a clock itself; its callers pass ``now`` from one of these."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """A source of milliseconds."""

    def now_ms(self) -> int:
        """The current time in milliseconds."""
        ...


class SystemClock:
    """Wall-clock milliseconds since the epoch (persisted timestamps must survive restarts, so not monotonic)."""

    def now_ms(self) -> int:
        """``time.time()`` in whole milliseconds."""
        return time.time_ns() // 1_000_000


class ManualClock:
    """A clock that only moves when told to; tests and the demo drive it."""

    def __init__(self, start_ms: int = 0) -> None:
        self._now = start_ms

    def now_ms(self) -> int:
        """The current manual time."""
        return self._now

    def advance(self, ms: int) -> int:
        """Move forward by ``ms`` (not backwards) and return the new time."""
        if ms < 0:
            raise ValueError("a manual clock does not go backwards")
        self._now += ms
        return self._now
