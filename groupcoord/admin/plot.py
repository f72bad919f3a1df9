"""A PNG of consumer lag over the checkpoint runs: one line per group (its lag summed over partitions).

Needs the ``plot`` extra (matplotlib); without it :func:`plot_lag` raises :class:`PlotUnavailableError` with the
install hint. The figure is drawn without pyplot (no GUI backend, no global figure registry), so it works on a
headless driver.

The axes are set from the data rather than left to matplotlib, whose defaults fail at the extremes: a single run
got an x axis of several years and a y axis of a fraction of a record around the lag. Here time spans the runs plus
a margin of at least :data:`MIN_TIME_MARGIN` on each side (a lone run sits in a window of minutes), and lag, a count,
starts at 0, ends a little above the largest lag (at least at 1) and has whole-number ticks.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

if TYPE_CHECKING:
    from matplotlib.figure import Figure

MIN_TIME_MARGIN = dt.timedelta(minutes=5)
"""Least time shown before the first run and after the last (a checkpoint schedule's usual period)."""

TIME_MARGIN_SHARE = 0.05
"""Share of the runs' time span added on each side when that is more than :data:`MIN_TIME_MARGIN`."""

LAG_HEADROOM = 1.1
"""The y axis ends at the largest lag times this (at least at 1 record)."""

Series = dict[str, tuple[list[dt.datetime], list[int]]]


class PlotUnavailableError(RuntimeError):
    """matplotlib is not installed."""


def lag_series(window: pa.Table) -> Series:
    """Each group's (run times, lag summed over its partitions) from rows of ``offset_checkpoints``, by run time."""
    sums = window.group_by(["group_id", "run_time"]).aggregate([("lag", "sum")]).sort_by(
        [("group_id", "ascending"), ("run_time", "ascending")]).to_pylist()
    series: Series = {}
    for row in sums:
        times, lags = series.setdefault(row["group_id"], ([], []))
        times.append(row["run_time"])
        lags.append(row["lag_sum"] or 0)  # every partition's lag unknown (the topic is gone): nothing to show
    return series


def time_limits(series: Series) -> tuple[dt.datetime, dt.datetime] | None:
    """The x axis range: every run with a margin on both sides; None when there is no run."""
    times = [t for group_times, _ in series.values() for t in group_times]
    if not times:
        return None
    first, last = min(times), max(times)
    margin = max((last - first) * TIME_MARGIN_SHARE, MIN_TIME_MARGIN)
    return first - margin, last + margin


def lag_limits(series: Series) -> tuple[float, float]:
    """The y axis range: from 0 records to a little above the largest lag."""
    largest = max((lag for _, lags in series.values() for lag in lags), default=0)
    return 0.0, max(largest * LAG_HEADROOM, 1.0)


def lag_figure(window: pa.Table, *, title: str = "Consumer lag per checkpoint run") -> Figure:
    """The figure of the lag of every group over the runs in ``window`` (rows of ``offset_checkpoints``)."""
    try:
        from matplotlib.dates import AutoDateLocator, ConciseDateFormatter
        from matplotlib.figure import Figure
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        raise PlotUnavailableError("--plot needs matplotlib: pip install 'groupcoord[plot]'") from None
    series = lag_series(window)
    figure = Figure(figsize=(9, 4.5), dpi=100, layout="constrained")
    axes = figure.subplots()
    for group_id, (times, lags) in sorted(series.items()):
        # Not clipped: a marker at lag 0 sits on the x axis and would show only its upper half.
        axes.plot(times, lags, marker="o", markersize=5, linewidth=1.5, label=group_id,  # type: ignore[arg-type]
                  clip_on=False)
    axes.set_title(title)
    axes.set_xlabel("checkpoint run (UTC)")
    axes.set_ylabel("lag (records)")
    axes.grid(True, alpha=0.3)
    # matplotlib.dates has no type hints; its stubs elsewhere take datetimes only through unit conversion.
    locator = AutoDateLocator(tz=dt.UTC)  # type: ignore[no-untyped-call]
    axes.xaxis.set_major_locator(locator)
    axes.xaxis.set_major_formatter(ConciseDateFormatter(locator, tz=dt.UTC))  # type: ignore[no-untyped-call]
    axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    limits = time_limits(series)
    if limits:
        axes.set_xlim(*limits)  # type: ignore[arg-type]
        axes.legend(loc="best", fontsize="small")
    axes.set_ylim(*lag_limits(series))
    return figure


def plot_lag(window: pa.Table, path: str | Path, *, title: str = "Consumer lag per checkpoint run") -> Path:
    """Draw the lag of every group over the runs in ``window`` (rows of ``offset_checkpoints``) to ``path``."""
    figure = lag_figure(window, title=title)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(target, format="png")
    return target
