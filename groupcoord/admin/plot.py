"""A PNG of consumer lag over the checkpoint runs: one line per group (its lag summed over partitions).

Needs the ``plot`` extra (matplotlib); without it :func:`plot_lag` raises :class:`PlotUnavailableError` with the
install hint. Rendering uses the non-interactive Agg backend, so it works on a headless driver.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa


class PlotUnavailableError(RuntimeError):
    """matplotlib is not installed."""


def plot_lag(window: pa.Table, path: str | Path, *, title: str = "Consumer lag per checkpoint run") -> Path:
    """Draw the lag of every group over the runs in ``window`` (rows of ``offset_checkpoints``) to ``path``."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise PlotUnavailableError("--plot needs matplotlib: pip install 'groupcoord[plot]'") from None
    sums = window.group_by(["group_id", "run_time"]).aggregate([("lag", "sum")]).sort_by(
        [("group_id", "ascending"), ("run_time", "ascending")]).to_pylist()
    series: dict[str, tuple[list[Any], list[int]]] = {}
    for row in sums:
        times, lags = series.setdefault(row["group_id"], ([], []))
        times.append(row["run_time"])
        lags.append(row["lag_sum"] or 0)
    figure, axes = plt.subplots(figsize=(9, 4.5), dpi=100)
    try:
        for group_id, (times, lags) in sorted(series.items()):
            axes.plot(times, lags, marker="o", label=group_id)
        axes.set_title(title)
        axes.set_xlabel("checkpoint run (UTC)")
        axes.set_ylabel("lag (records)")
        axes.grid(True, alpha=0.3)
        if series:
            axes.legend(loc="upper left", fontsize="small")
        figure.autofmt_xdate()
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(target, format="png")
    finally:
        plt.close(figure)
    return target
