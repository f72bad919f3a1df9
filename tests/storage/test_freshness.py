"""An open table handle follows other writers' commits at once, and catches up after log cleanup within the
periodic listing (:mod:`groupcoord.storage.freshness`)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from groupcoord.storage.commits import commit_name
from groupcoord.storage.freshness import TableFreshness, next_commit_exists
from groupcoord.storage.tables import table_filesystem

ROWS = pa.table({"n": pa.array([1], pa.int64())})


def _append(path: Path) -> None:
    write_deltalake(str(path), ROWS, mode="append")


def test_a_handle_sees_another_writers_commit_at_once(tmp_path: Path) -> None:
    _append(tmp_path)
    reader = DeltaTable(str(tmp_path))
    freshness = TableFreshness(tmp_path)
    freshness.refresh(reader)
    assert reader.version() == 0
    assert not next_commit_exists(table_filesystem(tmp_path), 0)
    _append(tmp_path)
    _append(tmp_path)
    freshness.refresh(reader)
    assert reader.version() == 2


def test_a_handle_left_behind_by_log_cleanup_catches_up_at_the_next_listing(tmp_path: Path) -> None:
    """The commit after the handle's version is gone (a checkpoint covers it, cleanup deleted it): the existence
    check cannot see the new versions, the periodic listing does."""
    now = [0.0]
    _append(tmp_path)
    reader = DeltaTable(str(tmp_path))
    freshness = TableFreshness(tmp_path, full_refresh_s=5.0, clock=lambda: now[0])
    for _ in range(2):
        _append(tmp_path)
    writer = DeltaTable(str(tmp_path))
    writer.create_checkpoint()
    (tmp_path / commit_name(1)).unlink()
    now[0] = 4.9
    freshness.refresh(reader)
    assert reader.version() == 0, "no next commit file, and the listing is not due yet"
    now[0] = 5.0
    freshness.refresh(reader)
    assert reader.version() == 2
    assert reader.to_pyarrow_table().num_rows == 3
