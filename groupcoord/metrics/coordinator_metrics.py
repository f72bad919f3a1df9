"""The metrics of one coordinator host: its own registry, the few hooks the host wires in, and its phase.

One :class:`CoordinatorMetrics` per :class:`~groupcoord.host.CoordinatorHost`, each with a ``CollectorRegistry`` of
its own (never ``prometheus_client``'s global one), so several hosts in one process (tests, a driver and a tool)
never mix their series. The host wires it in at the seams it already owns, one call each:

- :meth:`CoordinatorMetrics.metered`: the dispatcher it builds, timed per API (:mod:`groupcoord.metrics.requests`);
- :meth:`CoordinatorMetrics.watch_records`: the runtime's ``persist``, for rebalances and offset commits
  (:mod:`groupcoord.metrics.record_watch`);
- :meth:`CoordinatorMetrics.on_record_log_commit`: the commit batcher's ``on_commit``, for the record log's Delta
  commit latency;
- :meth:`CoordinatorMetrics.timed`: the assignment runners, for the assignment time;
- :meth:`CoordinatorMetrics.serving` / :meth:`leave`: the term it serves, or the phase it is in;
- :meth:`CoordinatorMetrics.count_authentication_failures`: the endpoint's count, when it keeps one.

Everything else is read at scrape time (:mod:`groupcoord.metrics.state_collector`). The hooks run on the host's
event loop only: the instruments they feed are single-writer (:mod:`groupcoord.metrics.loop_instruments`).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import TypeVar

from prometheus_client import CollectorRegistry
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from groupcoord.coordinator import GroupCoordinator
from groupcoord.log.batcher import CommitTiming
from groupcoord.log.lease import LeaseTable
from groupcoord.metrics.authentication import AuthenticationFailures
from groupcoord.metrics.host_state import HostState, Phase, ServingTerm
from groupcoord.metrics.loop_instruments import LoopCounter, LoopHistogram
from groupcoord.metrics.record_watch import CLASSIC, CONSUMER, REBALANCE_BUCKETS, RecordWatch
from groupcoord.metrics.requests import metered
from groupcoord.metrics.state_collector import StateCollector
from groupcoord.runtime import Persist
from groupcoord.server.api import ApiHandler, Dispatcher
from groupcoord.server.versions import ApiKey

_In = TypeVar("_In")
_Out = TypeVar("_Out")

ASSIGNMENT_BUCKETS: tuple[float, ...] = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
"""Seconds: a Python assignor answers in milliseconds, a batched Spark job in a second or more."""


class CoordinatorMetrics:
    """The registry and hooks of one host (see the module docs). ``lease_table`` is read while standing by."""

    def __init__(self, *, holder_id: str, lease_table: LeaseTable | None = None) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.host = HostState(holder_id, lease_table)
        self.requests = LoopHistogram(
            "groupcoord_request_seconds", "Time from a request's decoding to its response, by Kafka API (the "
            "_count's rate is the request rate).", "api")
        self.rebalances = LoopHistogram(
            "groupcoord_rebalance_seconds", "Completed rebalances by group type, from the group leaving Stable "
            "(or Empty) to Stable again.", "type", buckets=REBALANCE_BUCKETS)
        self.offset_commits = LoopCounter(
            "groupcoord_offset_commits", "Offsets committed (one per partition of an OffsetCommit), by group type.",
            "type")
        self.delta_commit_seconds = LoopHistogram(
            "groupcoord_delta_commit_seconds", "Duration of the holder's Delta commits, by table.", "table")
        self.assignment_seconds = LoopHistogram(
            "groupcoord_assignment_seconds", "Duration of a server-side assignment call (one batch of groups), by "
            "group type.", "type", buckets=ASSIGNMENT_BUCKETS)
        for kind in (CLASSIC, CONSUMER):  # every series exists from the start, at 0: panels and alerts see it
            self.rebalances.child(kind)
            self.offset_commits.inc(kind, 0)
            self.assignment_seconds.child(kind)
        self.delta_commit_seconds.child("record_log")
        self.registry.register(StateCollector(self.host))
        self.registry.register(_LoopFamilies(self))

    # --- hooks --------------------------------------------------------------------------------------------------

    def metered(self, dispatcher: Dispatcher) -> dict[ApiKey, ApiHandler]:
        """``dispatcher`` with its handlers timed per API."""
        return metered(dispatcher, self.requests)

    def watch_records(self, core: GroupCoordinator, persist: Persist) -> Persist:
        """``persist`` that first counts the rebalances and offset commits in the records of ``core``."""
        return RecordWatch(core, rebalances=self.rebalances, offset_commits=self.offset_commits).watching(persist)

    def on_record_log_commit(self, timing: CommitTiming) -> None:
        """The commit batcher's ``on_commit``: one record-log Delta commit landed."""
        self.host.note_log_commit()
        self.delta_commit_seconds.observe("record_log", timing.written - timing.started)

    def timed(self, runner: Callable[[Sequence[_In]], Awaitable[_Out]] | None,
              kind: str) -> Callable[[Sequence[_In]], Awaitable[_Out]] | None:
        """``runner`` (an assignment runner, or ``None``) with each call timed under ``type=kind``."""
        if runner is None:
            return None
        series = self.assignment_seconds.child(kind)
        timed_runner = runner

        async def timed_call(batch: Sequence[_In]) -> _Out:
            started = time.perf_counter()
            try:
                return await timed_runner(batch)
            finally:
                series.observe(time.perf_counter() - started)

        return timed_call

    def count_authentication_failures(self, source: AuthenticationFailures | None) -> None:
        """Read ``groupcoord_authentication_failures_total`` from ``source`` (``None``: 0)."""
        self.host.authentication = source

    # --- the host's phase ---------------------------------------------------------------------------------------

    def serving(self, term: ServingTerm) -> None:
        """The host holds the lease and serves ``term``."""
        self.host.serving(term)

    def leave(self, phase: Phase) -> None:
        """The host no longer serves: it is ``phase`` now (starting again, standing by or stopped)."""
        self.host.leave(phase)


class _LoopFamilies(Collector):
    """The families of the loop-written instruments."""

    def __init__(self, metrics: CoordinatorMetrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Metric]:
        m = self._metrics
        yield m.requests.family()
        yield m.rebalances.family()
        yield m.offset_commits.family()
        yield m.delta_commit_seconds.family()
        yield m.assignment_seconds.family()
