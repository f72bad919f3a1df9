"""The Delta file writer both logs commit through: one file per partition, exclusive versions, fsync on request."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from groupcoord.storage.files import (
    CommitConflictError,
    FileAppend,
    Part,
    append_file,
    commit_path,
    file_stats,
    split_by_partition,
    write_data_file,
)
from groupcoord.storage.tables import open_or_create

SCHEMA = pa.schema([pa.field("p", pa.int32(), nullable=False), pa.field("n", pa.int64(), nullable=False),
                    pa.field("v", pa.binary())])


def _table(tmp_path: Path) -> Path:
    open_or_create(tmp_path / "t", SCHEMA, partition_by=["p"])
    return tmp_path / "t"


def _rows(pairs: list[tuple[int, int]]) -> pa.Table:
    return pa.table({"p": pa.array([p for p, _ in pairs], pa.int32()), "n": pa.array([n for _, n in pairs]),
                     "v": pa.array([b"x%d" % n for _, n in pairs], pa.binary())}, schema=SCHEMA)


def test_one_commit_holds_one_file_per_partition_with_statistics_that_delta_rs_reads(tmp_path: Path) -> None:
    path = _table(tmp_path)
    parts = split_by_partition(_rows([(0, 0), (0, 1), (2, 0), (2, 1), (2, 2)]), "p")
    assert [(dict(part.partition), part.rows.num_rows, part.rows.column_names) for part in parts] == [
        ({"p": "0"}, 2, ["n", "v"]), ({"p": "2"}, 3, ["n", "v"])]

    append_file(path, FileAppend(version=1, parts=parts, partition_by=("p",),
                                 commit_info={"groupcoord_operation": "test"}), fsync=False)

    table = DeltaTable(str(path))
    assert table.version() == 1 and table.history(1)[0]["groupcoord_operation"] == "test"
    actions = pa.table(table.get_add_actions(flatten=True)).sort_by("partition.p")
    assert actions.column("partition.p").to_pylist() == [0, 2]
    assert actions.column("min.n").to_pylist() == [0, 0] and actions.column("max.n").to_pylist() == [1, 2]
    read = table.to_pyarrow_table().sort_by([("p", "ascending"), ("n", "ascending")])
    assert read.column("v").to_pylist() == [b"x0", b"x1", b"x0", b"x1", b"x2"]


def test_a_taken_version_is_a_conflict_and_commits_nothing(tmp_path: Path) -> None:
    path = _table(tmp_path)
    append_file(path, FileAppend(version=1, parts=split_by_partition(_rows([(0, 0)]), "p")), fsync=False)
    before = commit_path(path, 1).read_bytes()
    with pytest.raises(CommitConflictError, match="already exists"):
        append_file(path, FileAppend(version=1, parts=split_by_partition(_rows([(0, 1)]), "p")), fsync=False)
    with pytest.raises(CommitConflictError, match="no version 2"):
        append_file(path, FileAppend(version=3, parts=split_by_partition(_rows([(0, 1)]), "p")), fsync=False)
    assert commit_path(path, 1).read_bytes() == before
    assert DeltaTable(str(path)).to_pyarrow_table().num_rows == 1


def test_without_fsync_nothing_is_synced_and_with_it_every_new_entry_is_before_the_link(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import groupcoord.storage.files as files

    path = _table(tmp_path)
    synced: list[Path] = []
    real_link = os.link

    def link(source: str, target: Path) -> None:
        synced.append(Path("<link>"))
        real_link(source, target)

    monkeypatch.setattr(files, "_fsync_path", synced.append)
    monkeypatch.setattr(files, "_fsync_dir", synced.append)
    monkeypatch.setattr(os, "link", link)
    append_file(path, FileAppend(version=1, parts=split_by_partition(_rows([(0, 0), (1, 0)]), "p")), fsync=False)
    assert synced == [Path("<link>")]

    synced.clear()
    append_file(path, FileAppend(version=2, parts=split_by_partition(_rows([(1, 1), (5, 0)]), "p")), fsync=True)
    before_link = set(synced[:synced.index(Path("<link>"))])
    adds = [json.loads(line)["add"]["path"] for line in commit_path(path, 2).read_text().splitlines()[1:]]
    # Both data files, their directories, and the entry naming the new partition directory p=5.
    assert {path / add for add in adds} | {path / "p=1", path / "p=5", path} <= before_link
    assert synced[-1] == path / "_delta_log"  # the commit's own entry, after the link


def test_a_commit_holds_the_files_written_ahead_of_it_first(tmp_path: Path) -> None:
    path = _table(tmp_path)
    ahead = write_data_file(path, _rows([(0, 0)]).drop_columns(["p"]), partition={"p": "0"}, fsync=False)
    append_file(path, FileAppend(version=1, parts=(Part(_rows([(0, 1)]).drop_columns(["p"]), {"p": "0"}),),
                                 written=(ahead,)), fsync=False)
    adds = [json.loads(line)["add"]["path"] for line in commit_path(path, 1).read_text().splitlines()[1:]]
    assert adds[0] == ahead["path"] and len(adds) == 2
    assert sorted(DeltaTable(str(path)).to_pyarrow_table().column("n").to_pylist()) == [0, 1]


@pytest.mark.parametrize("rows", [5, 5000], ids=["small, in Python", "large, by compute kernel"])
def test_statistics_are_the_same_whichever_way_a_column_is_scanned(rows: int) -> None:
    # Bounds sit in the first rows and the filler between them, so both paths must find the same min and max.
    def column(low: int, high: int, filler: int, type_: pa.DataType) -> pa.Array:
        return pa.array([low, high, *([filler] * (rows - 2))], type_)

    table = pa.table({
        "us": column(-1_500, 1_767_225_600_123_001, 0, pa.timestamp("us", tz="UTC")),  # before and after the epoch
        "ns": column(1_000_000, 1_767_225_600_123_000_001, 5_000_000, pa.timestamp("ns", tz="UTC")),
        "s": column(-1, 1_767_225_600, 0, pa.timestamp("s", tz="UTC")),
        "i": column(-7, 9, 3, pa.int32()),
        "b": pa.array([False, True, *([True] * (rows - 2))]),
        "with_nulls": pa.array([None, 4, *([2] * (rows - 2))], pa.int64()),
    })
    stats = file_stats(table)
    assert stats["minValues"] == {"us": "1969-12-31T23:59:59.998Z", "ns": "1970-01-01T00:00:00.001Z",
                                  "s": "1969-12-31T23:59:59.000Z", "i": -7, "b": False, "with_nulls": 2}
    assert stats["maxValues"] == {"us": "2026-01-01T00:00:00.124Z", "ns": "2026-01-01T00:00:00.124Z",
                                  "s": "2026-01-01T00:00:00.000Z", "i": 9, "b": True, "with_nulls": 4}
    assert stats["nullCount"]["with_nulls"] == 1 and stats["numRecords"] == rows
