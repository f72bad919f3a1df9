"""Heartbeat timekeeping: when to send the next heartbeat, and whether the session or the poll interval ran out.

A small class with no I/O and an injected clock (like kafka-python's ``heartbeat.py``), so it is unit-tested by
moving a manual clock. All times are monotonic milliseconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


def monotonic_ms() -> float:
    """The monotonic clock in milliseconds."""
    return time.monotonic() * 1000


@dataclass(frozen=True, kw_only=True)
class HeartbeatTiming:
    """The timeouts a member heartbeats by."""

    session_timeout_ms: int
    heartbeat_interval_ms: int
    rebalance_timeout_ms: int
    retry_backoff_ms: int = 100

    def __post_init__(self) -> None:
        if self.heartbeat_interval_ms <= 0 or self.session_timeout_ms <= 0 or self.rebalance_timeout_ms <= 0:
            raise ValueError("session_timeout_ms, heartbeat_interval_ms and rebalance_timeout_ms must be positive")
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ValueError(
                f"heartbeat_interval_ms ({self.heartbeat_interval_ms}) must be lower than session_timeout_ms "
                f"({self.session_timeout_ms})"
            )


class HeartbeatTimer:
    """Tracks heartbeat sends, answers and polls against :class:`HeartbeatTiming`."""

    def __init__(self, timing: HeartbeatTiming, *, clock: Callable[[], float] = monotonic_ms) -> None:
        self.timing = timing
        self._clock = clock
        now = clock()
        self._last_send = now
        self._last_receive = now
        self._last_poll = now
        self._failed = False

    def poll(self) -> None:
        """The application called ``poll()``: it is alive."""
        self._last_poll = self._clock()

    def sent_heartbeat(self) -> None:
        """A heartbeat went out."""
        self._last_send = self._clock()
        self._failed = False

    def received_heartbeat(self) -> None:
        """The coordinator answered a heartbeat without error: the session is alive."""
        self._last_receive = self._clock()

    def fail_heartbeat(self) -> None:
        """A heartbeat got no answer: retry after the retry backoff instead of a full interval."""
        self._failed = True

    def reset_timeouts(self) -> None:
        """A join or sync completed: the session and the poll interval start afresh."""
        now = self._clock()
        self._last_send = self._last_receive = self._last_poll = now
        self._failed = False

    def time_to_next_heartbeat_ms(self) -> float:
        """Milliseconds until the next heartbeat is due (0 when due now)."""
        delay = self.timing.retry_backoff_ms if self._failed else self.timing.heartbeat_interval_ms
        return max(0.0, self._last_send + delay - self._clock())

    def should_heartbeat(self) -> bool:
        """True when a heartbeat is due."""
        return self.time_to_next_heartbeat_ms() == 0

    def session_timeout_expired(self) -> bool:
        """True when no heartbeat was answered for a whole session timeout: the coordinator has likely lost us."""
        return self._clock() - self._last_receive > self.timing.session_timeout_ms

    def poll_timeout_expired(self) -> bool:
        """True when the application has not polled within the rebalance timeout (Kafka's max.poll.interval.ms)."""
        return self._clock() - self._last_poll > self.timing.rebalance_timeout_ms
