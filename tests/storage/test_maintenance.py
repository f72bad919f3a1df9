"""Record-log maintenance: retention of superseded segments, compaction, vacuum; loads are unaffected."""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
from pathlib import Path

import pyarrow as pa
import pyarrow.compute
import pytest
from deltalake import DeltaTable
from storage_helpers import offset

from groupcoord.log.base import LogFencedError
from groupcoord.log.batcher import BatcherConfig, CommitBatcher
from groupcoord.log.delta import DeltaRecordLog
from groupcoord.log.maintenance import (
    maintain_log,
    maintain_record_log,
    prepare_compaction,
    run_log_maintenance,
)


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


def test_closed_segments_compacted_outside_the_commit_slot_while_the_writer_appends(tmp_path: Path) -> None:
    log = DeltaRecordLog(tmp_path / "log")
    version = _history(log)
    prepared = prepare_compaction(log)
    assert prepared is not None and prepared.segments == (-1, 5)
    # The writer goes on meanwhile: appends to the current segment and a new snapshot (segment 10 becomes closed).
    version = log.append([offset("g", 3, 30)], expected_version=version)
    version = log.write_snapshot([offset("g", n, 40 + n) for n in range(5)], expected_version=version)
    before = DeltaRecordLog(tmp_path / "log").load()

    report = run_log_maintenance(log, version, retention_hours=168, prepared=prepared)

    assert report.compacted_files == 5 + 5 + 4  # the prepared segments, then segment 10 inside the slot
    files = pa.table(DeltaTable(str(tmp_path / "log")).get_add_actions(flatten=True))
    assert sorted(files.column("partition.segment").to_pylist()) == [-1, 5, 10, 14]
    rows = DeltaTable(str(tmp_path / "log")).to_pyarrow_table()
    old = rows.filter(pa.compute.equal(rows.column("segment"), -1))
    assert old.column("log_version").to_pylist() == [0, 1, 2, 3, 4]  # one file, in commit order
    after = DeltaRecordLog(tmp_path / "log").load()
    assert (after.records, after.tail_records) == (before.records, before.tail_records)
    assert log.append([offset("g", 9, 9)], expected_version=report.version) == report.version + 1


def test_a_prepared_compaction_of_files_removed_meanwhile_is_skipped(tmp_path: Path) -> None:
    log = DeltaRecordLog(tmp_path / "log")
    version = _history(log)
    prepared = prepare_compaction(log)
    version = run_log_maintenance(log, version, retention_hours=168).version  # compacts everything itself
    rows_before = DeltaTable(str(tmp_path / "log")).to_pyarrow_table().num_rows

    report = run_log_maintenance(log, version, retention_hours=168, prepared=prepared)

    assert report.compacted_files == 0
    assert DeltaTable(str(tmp_path / "log")).to_pyarrow_table().num_rows == rows_before == 21


def test_maintain_record_log_runs_in_the_batchers_commit_slot(tmp_path: Path) -> None:
    log = DeltaRecordLog(tmp_path / "log")
    version = _history(log)

    async def main() -> tuple[int, int]:
        batcher = CommitBatcher(log, version=version, config=BatcherConfig(linger_ms=1, min_commit_interval_ms=0))
        maintained = await maintain_record_log(batcher, log)
        after = await batcher.append([offset("g", 8, 8)])
        await batcher.close()
        return maintained, after

    maintained, after = asyncio.run(main())
    assert after == maintained + 1
    assert len(DeltaTable(str(tmp_path / "log")).file_uris()) == 4
