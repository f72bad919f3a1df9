"""Burrow's status rules: one test per status, each a window of checkpoint observations (oldest first)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from groupcoord.admin.burrow import GroupStatus, Observation, group_status, partition_status

T0 = dt.datetime(2024, 5, 1, 10, 0, tzinfo=dt.UTC)
RUN = dt.timedelta(minutes=1)


def window(offsets: Sequence[int], lags: Sequence[int], *, commits: Sequence[int] | None = None) -> list[Observation]:
    """Observations at runs T0, T0+1m, ...; ``commits`` are the minutes of the commit times (default: at each run)."""
    minutes = commits if commits is not None else range(len(offsets))
    return [Observation(T0 + i * RUN, o, lag, T0 + m * RUN)
            for i, (o, lag, m) in enumerate(zip(offsets, lags, minutes, strict=True))]


def test_ok_when_the_consumer_caught_up_in_the_window() -> None:
    assert partition_status(window([10, 20, 30, 40], [5, 0, 5, 8])) == "OK"
    assert partition_status(window([10, 20, 30, 40], [9, 8, 7, 0])) == "OK"  # caught up now
    assert partition_status(window([10, 20, 30, 40], [9, 12, 7, 8])) == "OK"  # lag went down once
    assert partition_status(window([10], [50])) == "OK"  # one run: nothing to compare yet


def test_warn_when_offsets_move_but_lag_never_shrinks() -> None:
    assert partition_status(window([10, 20, 30, 40], [5, 7, 7, 9])) == "WARN"


def test_stop_when_commits_stopped_for_longer_than_the_window_saw_them() -> None:
    # Commits at minutes 0..2, the runs continue to minute 6: 4 minutes of silence > 2 minutes of commits.
    observations = window([10, 20, 30, 30, 30, 30, 30], [5, 6, 7, 9, 11, 13, 15], commits=[0, 1, 2, 2, 2, 2, 2])
    assert partition_status(observations) == "STOP"
    # The same silence after catching up is no problem: lag zero now is always OK.
    assert partition_status([*observations[:-1], Observation(T0 + 6 * RUN, 30, 0, T0 + 2 * RUN)]) == "OK"


def test_stall_when_commits_keep_coming_at_the_same_offset() -> None:
    assert partition_status(window([30, 30, 30, 30], [4, 4, 6, 9])) == "STALL"


def test_rewind_when_the_committed_offset_went_backwards() -> None:
    assert partition_status(window([30, 40, 12, 20], [4, 3, 35, 40])) == "REWIND"


def test_err_when_the_worst_partition_is_stop_stall_or_rewind_and_a_group_is_its_worst_partition() -> None:
    assert group_status(["OK", "WARN", "OK"]) == GroupStatus("WARN", "WARN")
    assert group_status(["OK", "STALL", "WARN"]) == GroupStatus("ERR", "STALL")
    assert group_status(["STOP", "REWIND"]) == GroupStatus("ERR", "REWIND")
    assert group_status(["STOP"]) == GroupStatus("ERR", "STOP")
    assert group_status([]) == GroupStatus("OK", "OK")
