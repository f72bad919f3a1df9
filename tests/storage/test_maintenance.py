"""Record-log maintenance: retention of superseded segments, compaction, vacuum; loads are unaffected."""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
from pathlib import Path

import pytest
from deltalake import DeltaTable
from storage_helpers import offset

from groupcoord.log.base import LogFencedError
from groupcoord.log.batcher import BatcherConfig, CommitBatcher
from groupcoord.log.delta import DeltaRecordLog
from groupcoord.log.maintenance import maintain_log, run_log_maintenance


def _history(log: DeltaRecordLog) -> int:
    """Three segments: -1 (5 commits), the snapshot at 5 (+4 commits), the snapshot at 10 (+2 commits)."""
    version = -1
    for n in range(5):
        version = log.append([offset("g", n, n)], expected_version=version)
    version = log.write_snapshot([offset("g", n, n) for n in range(5)], expected_version=version)
    for n in range(4):
        version = log.append([offset("g", n, 10 + n)], expected_version=version)
    version = log.write_snapshot([offset("g", n, 10 + n) for n in range(5)], expected_version=version)
    for n in range(2):
        version = log.append([offset("g", n, 20 + n)], expected_version=version)
    return version


def _data_files(path: Path) -> int:
    return sum(1 for _ in path.glob("segment=*/*.parquet"))


def test_compaction_and_vacuum_keep_every_row_and_shrink_the_file_count(tmp_path: Path) -> None:
    log = DeltaRecordLog(tmp_path / "log")
    version = _history(log)
    before = DeltaRecordLog(tmp_path / "log").load()
    files_before = _data_files(tmp_path / "log")
    report = run_log_maintenance(log, version, retention_hours=0)
    assert report.dropped_segments == (-1, 5)
    assert report.vacuumed_files > 0
    assert _data_files(tmp_path / "log") < files_before
    after = DeltaRecordLog(tmp_path / "log").load()
    assert (after.records, after.tail_records) == (before.records, before.tail_records)
    assert after.version == report.version
    assert log.append([offset("g", 9, 9)], expected_version=report.version) == report.version + 1


def test_segments_within_the_retention_are_compacted_not_dropped(tmp_path: Path) -> None:
    log = DeltaRecordLog(tmp_path / "log")
    version = _history(log)
    before = DeltaRecordLog(tmp_path / "log").load()
    report = run_log_maintenance(log, version, retention_hours=168)
    assert report.dropped_segments == ()
    assert report.compacted_files == 5 + 5 + 3  # the current segment's files too
    assert len(DeltaTable(str(tmp_path / "log")).file_uris()) == 3  # one file per segment
    after = DeltaRecordLog(tmp_path / "log").load()
    assert (after.records, after.tail_records, after.epoch) == (before.records, before.tail_records, before.epoch)
    rows = DeltaTable(str(tmp_path / "log")).to_pyarrow_table()
    assert rows.num_rows == 5 + 5 + 4 + 5 + 2
    old = [r for r in rows.to_pylist() if r["segment"] == -1]
    assert sorted(r["log_version"] for r in old) == [0, 1, 2, 3, 4]


def test_maintenance_behind_a_rival_commit_is_fenced(tmp_path: Path) -> None:
    log = DeltaRecordLog(tmp_path / "log")
    version = _history(log)
    DeltaRecordLog(tmp_path / "log").append([offset("rival", 0, 1)], expected_version=version)
    with pytest.raises(LogFencedError):
        maintain_log(log, version, retention_hours=0)


def test_maintenance_runs_in_the_batcher_slot_between_appends(tmp_path: Path) -> None:
    log = DeltaRecordLog(tmp_path / "log")
    version = _history(log)

    async def main() -> tuple[int, int, int]:
        batcher = CommitBatcher(log, version=version, config=BatcherConfig(linger_ms=1, min_commit_interval_ms=0))
        first = asyncio.ensure_future(batcher.append([offset("g", 7, 1)]))
        maintained = asyncio.ensure_future(
            batcher.run_exclusive(functools.partial(maintain_log, log, retention_hours=0, now=dt.datetime.now(dt.UTC)))
        )
        last = asyncio.ensure_future(batcher.append([offset("g", 7, 2)]))
        result = await asyncio.gather(first, maintained, last)
        await batcher.close()
        return result[0], result[1], result[2]

    first, maintained, last = asyncio.run(main())
    assert first < maintained < last
    loaded = DeltaRecordLog(tmp_path / "log").load()
    assert loaded.version == last
    assert loaded.records[-2:] == (offset("g", 7, 1), offset("g", 7, 2))
