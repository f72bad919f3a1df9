"""The lag PNG's axes for 1, 3 and 50 checkpoint runs, from a real ``offset_checkpoints`` Delta table.

The runs are written in one delta-rs commit (the job writes one delta-spark commit per run, which
``test_checkpoint_job`` covers; 50 Spark writes would only slow this test down) and read back as the job does
(``read_window``); the lag values are made up here instead of computed by Spark.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from deltalake import write_deltalake
from matplotlib.axes import Axes
from matplotlib.dates import num2date

from groupcoord.admin.checkpoint import CHECKPOINT_SCHEMA, read_window
from groupcoord.admin.plot import lag_figure, plot_lag

START = dt.datetime(2026, 11, 25, 6, 0, tzinfo=dt.UTC)
PERIOD = dt.timedelta(minutes=5)


def snapshot(run: int, lags: list[int]) -> pa.Table:
    """Run ``run`` of group ``billing``: one row per partition of ``orders`` with these lags."""
    when = START + run * PERIOD
    count = len(lags)
    return pa.table({
        "run_id": [f"r{run:02d}"] * count, "run_time": [when] * count, "group_id": ["billing"] * count,
        "topic": ["orders"] * count, "partition": list(range(count)), "offset": [100 * run] * count,
        "log_end_offset": [100 * run + lag for lag in lags], "lag": lags, "commit_time": [when] * count,
    }, schema=CHECKPOINT_SCHEMA)


def x_limits(axes: Axes) -> tuple[dt.datetime, dt.datetime]:
    """The x axis range as UTC datetimes."""
    left, right = axes.get_xlim()
    return num2date(left), num2date(right)  # type: ignore[no-untyped-call]


def window_of(tmp_path: Path, runs: int) -> pa.Table:
    """The job's plot input after ``runs`` runs whose summed lag is 3 * run (the first run's: 0)."""
    table = tmp_path / "offset_checkpoints"
    write_deltalake(str(table), pa.concat_tables(snapshot(run, [run, 2 * run]) for run in range(runs)))
    return read_window(table, runs)


@pytest.mark.parametrize("runs", [1, 3, 50])
def test_axes_hold_every_run_from_lag_zero_with_a_margin_of_minutes(tmp_path: Path, runs: int) -> None:
    figure = lag_figure(window_of(tmp_path, runs))
    (axes,) = figure.axes
    left, right = x_limits(axes)
    first, last = START, START + (runs - 1) * PERIOD
    assert left < first and last < right
    assert right - left < dt.timedelta(days=1)
    assert right - left <= (last - first) * 1.1 + 2 * PERIOD  # the runs fill the axis: margins of minutes
    bottom, top = axes.get_ylim()
    largest = 3 * (runs - 1)
    assert bottom == 0
    assert max(largest, 1) <= top <= max(largest * 1.2, 1)
    (line,) = axes.get_lines()
    assert line.get_marker() == "o"
    assert np.asarray(line.get_xdata()).size == runs


def test_a_single_run_with_no_lag_gets_a_y_axis_of_one_record_and_the_png_is_written(tmp_path: Path) -> None:
    window = window_of(tmp_path, 1)
    assert window.column("lag").to_pylist() == [0, 0]
    (axes,) = lag_figure(window).axes
    assert axes.get_ylim() == (0, 1)
    left, right = x_limits(axes)
    assert (left, right) == (START - PERIOD, START + PERIOD)
    png = plot_lag(window, tmp_path / "plots" / "lag.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_no_runs_draw_an_empty_plot(tmp_path: Path) -> None:
    (axes,) = lag_figure(CHECKPOINT_SCHEMA.empty_table()).axes
    assert axes.get_lines() == []
    assert axes.get_ylim() == (0, 1)
