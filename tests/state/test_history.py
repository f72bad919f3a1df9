"""Time travel over the state tables: by Delta version, by time, and clear errors outside the kept history."""

from __future__ import annotations

import datetime as dt
import time

import pytest
from deltalake import DeltaTable

from groupcoord.state.history import StateHistoryError
from groupcoord.state.materializer import Materializer, MaterializerConfig
from groupcoord.state.schema import GROUPS, OFFSETS, STATE_TABLES
from groupcoord.state.views import read_view
from groupcoord.state_root import StateRoot

from .scenario import LoggedCoordinator


def committed_offsets(root: StateRoot, as_of: int | dt.datetime | str | None = None) -> list[int]:
    """The committed offsets of solo/x/0 in the offsets view as of ``as_of``."""
    return [r["offset"] for r in read_view(root, OFFSETS, as_of=as_of).to_pylist()]


def commit_and_materialize(coordinator: LoggedCoordinator, offsets: range) -> list[dt.datetime]:
    """One commit and one materialization per offset; returns a time right after each (commits 50 ms apart)."""
    times = []
    for offset in offsets:
        coordinator.commit("solo", {("x", 0): offset})
        coordinator.materialize()
        times.append(dt.datetime.now(dt.UTC))
        time.sleep(0.05)
    return times


def test_as_of_a_delta_version_reads_that_version(coordinator: LoggedCoordinator, root: StateRoot) -> None:
    commit_and_materialize(coordinator, range(100, 103))

    assert [committed_offsets(root, as_of=v) for v in range(3)] == [[100], [101], [102]]
    assert committed_offsets(root) == [102]


def test_as_of_a_time_reads_the_newest_version_committed_before_it(
        coordinator: LoggedCoordinator, root: StateRoot) -> None:
    before = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)
    times = commit_and_materialize(coordinator, range(100, 103))

    assert [committed_offsets(root, as_of=t) for t in times] == [[100], [101], [102]]
    assert committed_offsets(root, as_of=times[0].isoformat()) == [100]
    naive_utc = times[1].replace(tzinfo=None)
    assert committed_offsets(root, as_of=naive_utc) == [101]
    assert committed_offsets(root, as_of=before) == []  # the table did not exist yet


def test_as_of_older_than_the_kept_history_names_the_oldest_available_point(root: StateRoot) -> None:
    coordinator = LoggedCoordinator(root)
    coordinator.materializer = Materializer(root, config=MaterializerConfig(retention_hours=0, checkpoint_interval=2))
    times = commit_and_materialize(coordinator, range(100, 106))
    coordinator.materializer.maintain()  # compaction, vacuum and log clean-up with a zero retention
    latest = DeltaTable(str(root.state_table_path("offsets"))).version()  # maintenance commits took versions too
    assert latest > 5

    with pytest.raises(StateHistoryError,
                       match=rf"as_of version 1 is older .* oldest available point is version {latest} at"):
        read_view(root, OFFSETS, as_of=1)
    with pytest.raises(StateHistoryError, match=rf"oldest available point is version {latest} at \d{{4}}-\d\d-"):
        read_view(root, OFFSETS, as_of=times[0])
    assert committed_offsets(root, as_of=latest) == [105]


def test_as_of_past_the_latest_version_or_unparseable_is_refused(
        coordinator: LoggedCoordinator, root: StateRoot) -> None:
    commit_and_materialize(coordinator, range(1))

    with pytest.raises(StateHistoryError, match="has no version 5; its latest version is 0"):
        read_view(root, OFFSETS, as_of=5)
    with pytest.raises(StateHistoryError, match="neither a Delta version nor an ISO-8601 time"):
        read_view(root, OFFSETS, as_of="yesterday")
    with pytest.raises(StateHistoryError, match="negative"):
        read_view(root, OFFSETS, as_of=-1)


def test_tables_never_written_read_as_empty_views_with_their_schema(root: StateRoot) -> None:
    for table in STATE_TABLES.values():
        for as_of in (None, 3, "2024-05-01T10:00:00Z"):
            view = read_view(root, table, as_of=as_of)
            assert view.num_rows == 0
            assert view.schema == table.view_schema
    assert "deleted" not in GROUPS.view_schema.names
