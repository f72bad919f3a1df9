"""Counters and histograms written from one thread (the coordinator's event loop) and read at scrape time.

``prometheus_client``'s own ``Counter.inc`` and ``Histogram.observe`` take a lock per call: 4 and 8 us each on this
machine under load, a tenth of a heartbeat's cost. These keep plain integers that only the event loop's thread
changes (a bucket found with :func:`bisect.bisect_left`, well under a microsecond) and hand ``prometheus_client``
metric families when scraped; the families are exposed by ``prometheus_client`` as any other. A scrape copies the
numbers in one step each, so it may see an observation in one label's histogram and not yet in another's, never a
histogram whose ``_count`` disagrees with its ``+Inf`` bucket.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily

LATENCY_BUCKETS: tuple[float, ...] = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                                      5.0, 10.0, 30.0, 60.0, 300.0)
"""Seconds: from a heartbeat's half millisecond to a JoinGroup parked for a five-minute rebalance timeout."""


class LoopHistogram:
    """One histogram per label value, observed from a single thread (see the module docs)."""

    def __init__(self, name: str, documentation: str, label: str, *,
                 buckets: Sequence[float] = LATENCY_BUCKETS) -> None:
        if list(buckets) != sorted(buckets) or not buckets:
            raise ValueError(f"histogram {name}: buckets must be a non-empty ascending sequence, got {buckets!r}")
        self.name = name
        self.documentation = documentation
        self.label = label
        self._bounds = list(buckets)
        self._series: dict[str, HistogramSeries] = {}

    def child(self, value: str) -> HistogramSeries:
        """The series of label value ``value`` (resolve it once, then :meth:`HistogramSeries.observe` on it)."""
        series = self._series.get(value)
        if series is None:
            series = self._series[value] = HistogramSeries(self._bounds)
        return series

    def observe(self, value: str, seconds: float) -> None:
        """Add one observation to label value ``value``'s series."""
        self.child(value).observe(seconds)

    def family(self) -> HistogramMetricFamily:
        """The histogram as ``prometheus_client`` exposes it."""
        family = HistogramMetricFamily(self.name, self.documentation, labels=[self.label])
        for value, series in sorted(self._series.copy().items()):
            counts, total = series.counts.copy(), series.sum
            cumulative, buckets = 0, []
            for bound, count in zip([*self._bounds, math.inf], counts, strict=True):
                cumulative += count
                buckets.append(("+Inf" if bound == math.inf else repr(bound), cumulative))
            family.add_metric([value], buckets, total)
        return family


class HistogramSeries:
    """One label value's buckets (the last one is ``+Inf``) and sum."""

    __slots__ = ("_bounds", "counts", "sum")

    def __init__(self, bounds: list[float]) -> None:
        self._bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.sum = 0.0

    def observe(self, seconds: float) -> None:
        """Add one observation."""
        self.counts[bisect.bisect_left(self._bounds, seconds)] += 1
        self.sum += seconds


class LoopCounter:
    """One counter per label value, incremented from a single thread (see the module docs)."""

    def __init__(self, name: str, documentation: str, label: str) -> None:
        self.name = name
        self.documentation = documentation
        self.label = label
        self._values: dict[str, int] = {}

    def inc(self, value: str, amount: int = 1) -> None:
        """Add ``amount`` to label value ``value``."""
        self._values[value] = self._values.get(value, 0) + amount

    def family(self) -> CounterMetricFamily:
        """The counter as ``prometheus_client`` exposes it (``name`` gets the ``_total`` suffix)."""
        family = CounterMetricFamily(self.name, self.documentation, labels=[self.label])
        for value, count in sorted(self._values.copy().items()):
            family.add_metric([value], count)
        return family
