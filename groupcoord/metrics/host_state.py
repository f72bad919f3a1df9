"""What a coordinator host shows its metrics and ``/health``: its phase, and while it serves, the term's parts.

The host sets the phase as its cycle moves (``starting`` -> ``standing_by`` or ``serving`` -> ... -> ``stopped``) and
hands a :class:`ServingTerm` while it holds the lease. Scrapes and health checks run in the metrics server's threads:
they read the term's thread-safe parts directly (the lease keeper's lease, the materializer's lag, the topic logs'
offsets, the record log's Delta table) and sample the core's groups on the event loop (:func:`sample_groups` through
:meth:`ServingTerm.on_loop`): a group's state is computed from its members, which only the loop may walk. The
committed offsets, the bulk of a sample (5,000 groups of 10 partitions took 90 ms on the loop of this loaded
machine), are copied afterwards from the scrape's thread (:func:`committed_offsets`): each group's offsets in one
C-level copy of its dictionary, which no bytecode of the loop's thread can interleave with.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime as dt
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import TypeVar

from groupcoord.coordinator import GroupCoordinator
from groupcoord.log.batcher import CommitBatcher
from groupcoord.log.lease import HeldLease, LeaseInfo, LeaseTable
from groupcoord.metrics.authentication import AuthenticationFailures
from groupcoord.metrics.record_watch import CLASSIC, CONSUMER
from groupcoord.state.materializer import Materializer
from groupcoord.storage.location import TableLocation
from groupcoord.topics.appender import TopicAppender
from groupcoord.topics.embedded import EmbeddedTopics

_T = TypeVar("_T")

SAMPLE_TIMEOUT_S = 5.0
"""How long a scrape waits for the event loop to sample the core (a loop this late is itself the news)."""


class Phase(Enum):
    """Where the host is in its cycle; the value is what ``/health`` says."""

    STARTING = "starting"
    STANDING_BY = "standing_by"
    SERVING = "serving"
    STOPPED = "stopped"


@dataclass(frozen=True)
class GroupSample:
    """One group as sampled on the loop: type, state and member count."""

    group_id: str
    type: str
    state: str
    members: int


def sample_groups(core: GroupCoordinator) -> list[GroupSample]:
    """Every live group of ``core``, classic then consumer (call it on the core's loop)."""
    samples = []
    for group_id in core.group_ids():
        classic = core.group(group_id)
        if classic is not None:
            samples.append(GroupSample(group_id, CLASSIC, classic.state.value, classic.size))
    for group_id in core.consumer_group_ids():
        consumer = core.consumer_group(group_id)
        if consumer is not None:
            samples.append(GroupSample(group_id, CONSUMER, consumer.state.value, consumer.num_members))
    return samples


def committed_offsets(core: GroupCoordinator, group_id: str) -> dict[tuple[str, int], int]:
    """The committed offset of each partition of ``group_id`` (from any thread: see the module docs)."""
    values = dict(core.committed_offsets(group_id))
    return {tp: value.offset for tp, value in values.items()}


@dataclass(frozen=True)
class ServingTerm:
    """The parts of one term as lease holder that metrics read (see the module docs); ``topics`` reads the log ends
    for consumer lag, best through topic logs of its own (the Fetch path's are busy under load)."""

    loop: asyncio.AbstractEventLoop
    core: GroupCoordinator
    lease: Callable[[], HeldLease]
    batcher: CommitBatcher
    record_log: TableLocation
    materializer: Materializer
    topics: EmbeddedTopics
    appender: TopicAppender

    def on_loop(self, call: Callable[[], _T], timeout_s: float = SAMPLE_TIMEOUT_S) -> _T:
        """``call()`` run on the term's event loop (directly when already there); raises ``TimeoutError`` when the
        loop does not get to it in ``timeout_s`` and ``RuntimeError`` when the loop is closed."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            return call()
        future: concurrent.futures.Future[_T] = concurrent.futures.Future()

        def run() -> None:
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(call())
                except BaseException as exc:
                    future.set_exception(exc)

        self.loop.call_soon_threadsafe(run)
        try:
            return future.result(timeout_s)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"the event loop did not sample the coordinator within {timeout_s:g} s") from None


class HostState:
    """The phase, the serving term and the lease table of one host, shared by its collector and ``/health``."""

    def __init__(self, holder_id: str, lease_table: LeaseTable | None) -> None:
        self.holder_id = holder_id
        self.lease_table = lease_table
        self.phase = Phase.STARTING
        self.term: ServingTerm | None = None
        self.authentication: AuthenticationFailures | None = None
        self._lock = threading.Lock()
        self._last_log_commit = 0.0

    def note_log_commit(self) -> None:
        """The record log committed now (wall clock)."""
        self._last_log_commit = time.time()

    def serving(self, term: ServingTerm) -> None:
        """The host holds the lease and serves ``term`` (its takeover was the log's latest commit)."""
        with self._lock:
            self.note_log_commit()
            self.term, self.phase = term, Phase.SERVING

    def leave(self, phase: Phase) -> None:
        """The host stepped down, stands by or stopped."""
        with self._lock:
            self.term, self.phase = None, phase

    def current(self) -> tuple[Phase, ServingTerm | None]:
        """The phase and term, read together."""
        with self._lock:
            return self.phase, self.term

    def last_log_commit_age_s(self) -> float:
        """Seconds since this holder's record log last committed (its takeover included)."""
        return max(0.0, time.time() - self._last_log_commit)

    def lease_info(self, term: ServingTerm | None) -> LeaseInfo | None:
        """The lease as the holder keeps it, or else as the lease table says now (``None``: never taken, or no
        table)."""
        if term is not None:
            return term.lease().info
        if self.lease_table is None:
            return None
        return self.lease_table.read_current()


def seconds_until(when: dt.datetime) -> float:
    """Seconds from now to ``when`` (negative once past)."""
    return (when - dt.datetime.now(dt.UTC)).total_seconds()
