"""Driver-side progress of an ingestion run: records per second, lag and rebalances.

Everything is read from Delta, so the driver needs no channel to its executors: ingested rows from the sink's
per-file statistics, per-partition progress from the sink's app transactions (exactly what has been ingested), log
ends from the source, and the group's generation from the coordinator's materialized ``groups`` table (each new
generation is a rebalance). On a TTY a rich live line shows it; otherwise plain lines go to the ``groupcoord``
logger.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from kafka.structs import TopicPartition

from groupcoord.ingest.sources import SourceSpec
from groupcoord.sink.table import SinkTable
from groupcoord.source.log_view import LogView
from groupcoord.state.schema import GROUPS
from groupcoord.state.views import read_view
from groupcoord.state_root import StateRoot
from groupcoord.topics import TopicCatalog

log = logging.getLogger("groupcoord.ingest.progress")


@dataclass(frozen=True)
class ProgressSample:
    """One look at the run."""

    elapsed_s: float
    ingested: int
    records_per_s: float
    lag: int
    partitions: int
    generation: int | None
    rebalances: int

    def line(self) -> str:
        """The sample as one line."""
        generation = "-" if self.generation is None else str(self.generation)
        return (f"ingested {self.ingested:,} records ({self.records_per_s:,.0f}/s), lag {self.lag:,} over "
                f"{self.partitions} partition(s), generation {generation}, rebalances {self.rebalances}, "
                f"{self.elapsed_s:.0f}s")


class ProgressMonitor:
    """Samples the run every ``interval_s`` in a daemon thread and shows each sample (see the module docstring)."""

    def __init__(self, root: StateRoot, source: SourceSpec, sink: SinkTable, group_id: str,
                 wanted: Callable[[str], bool], *, interval_s: float = 2.0, tty: bool | None = None) -> None:
        self._root = root
        self._source = source
        self._sink = sink
        self._group_id = group_id
        self._wanted = wanted
        self._catalog = TopicCatalog(root)
        self._interval_s = interval_s
        self._tty = sys.stderr.isatty() if tty is None else tty
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = time.monotonic()
        self._last: tuple[float, int] | None = None
        self._generations: list[int] = []
        self._live: Any = None
        self._view: LogView | None = None
        self.samples: list[ProgressSample] = []

    def sample(self) -> ProgressSample:
        """Look at the run now."""
        now = time.monotonic()
        ingested = self._sink.row_count()
        rate = 0.0
        if self._last is not None and now > self._last[0]:
            rate = (ingested - self._last[1]) / (now - self._last[0])
        self._last = (now, ingested)
        partitions = [TopicPartition(t, p) for t, n in sorted(self._catalog.partition_counts().items())
                      if self._wanted(t) for p in range(n)]
        lag = 0
        if partitions:
            if self._view is None:
                self._view = self._source.log_view()
            bounds = self._view.bounds(partitions)
            versions = self._sink.versions(partitions)
            lag = sum(max(bounds[tp].end - (versions[tp] or bounds[tp].start), 0) for tp in partitions)
        generation = self._generation()
        if generation is not None and (not self._generations or self._generations[-1] != generation):
            self._generations.append(generation)
        sample = ProgressSample(now - self._started, ingested, rate, lag, len(partitions), generation,
                                max(len(self._generations) - 1, 0))
        self.samples.append(sample)
        return sample

    def _generation(self) -> int | None:
        view = read_view(self._root, GROUPS).to_pylist()
        return next((int(row["generation"]) for row in view if row["group_id"] == self._group_id
                     and row["generation"] is not None), None)

    def show(self, sample: ProgressSample) -> None:
        """A rich live line on a TTY, a log line otherwise."""
        if self._live is not None:
            from rich.text import Text

            self._live.update(Text(sample.line()))
        else:
            log.info("%s", sample.line())

    def start(self) -> ProgressMonitor:
        """Start sampling."""
        if self._tty:
            from rich.console import Console
            from rich.live import Live

            self._live = Live(console=Console(stderr=True), refresh_per_second=4, transient=False)
            self._live.start()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="groupcoord-ingest-progress")
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self._interval_s):
            try:
                self.show(self.sample())
            except Exception as exc:  # progress must never end the run
                log.debug("progress sample failed: %s", exc)

    def stop(self) -> ProgressSample:
        """Stop sampling; take, show and return a final sample."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        try:
            final = self.sample()
            self.show(final)
        finally:
            if self._view is not None:
                self._view.close()
                self._view = None
        if self._live is not None:
            self._live.stop()
            self._live = None
        return final

    def __enter__(self) -> ProgressMonitor:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._thread is not None and not self._stop.is_set():
            self.stop()
