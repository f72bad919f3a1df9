"""Record-log maintenance: superseded segments dropped, compaction outside the commit slot, garbage collection
within the log retention; loads are unaffected."""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
from pathlib import Path

import pyarrow as pa
import pyarrow.compute
import pytest
from deltalake import DeltaTable

from groupcoord.log.base import LogFencedError
from groupcoord.log.batcher import BatcherConfig, CommitBatcher
from groupcoord.log.delta import DeltaRecordLog
from groupcoord.log.maintenance import (
    STEPS,
    collect_garbage,
    commit_plan,
    maintain_log,
    maintain_record_log,
    plan_maintenance,
    run_log_maintenance,
)
from groupcoord.storage.maintenance import WRITE_GUARD, MaintenanceReport
from tests.log.storage_helpers import offset


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


def _live(path: Path) -> pa.Table:
    return pa.table(DeltaTable(str(path)).get_add_actions(flatten=True))


def test_segments_before_the_previous_one_are_dropped_and_the_kept_ones_compacted(tmp_path: Path) -> None:
    log = DeltaRecordLog(tmp_path / "log")
    version = _history(log)
    before = DeltaRecordLog(tmp_path / "log").load()
    report = run_log_maintenance(log, version)
    assert report.dropped == (-1,)
    assert report.compacted_files == 5 + 3  # segment 5 and the current segment 10, one file each now
    assert report.vacuumed_files == 0  # the removed files are kept for the log retention
    live = _live(tmp_path / "log")
    assert sorted(live.column("partition.segment").to_pylist()) == [5, 10]
    after = DeltaRecordLog(tmp_path / "log").load()
    assert (after.records, after.tail_records, after.epoch) == (before.records, before.tail_records, before.epoch)
    assert after.version == report.version
    kept = DeltaTable(str(tmp_path / "log")).to_pyarrow_table()
    assert sorted(kept.column("log_version").to_pylist()) == [5, 5, 5, 5, 5, 6, 7, 8, 9, 10, 10, 10, 10, 10, 11, 12]
    # Delta history still time-travels to before the drop, in the log retention.
    old = DeltaTable(str(tmp_path / "log"), version=version).to_pyarrow_table()
    assert old.num_rows == 5 + 5 + 4 + 5 + 2
    assert log.append([offset("g", 9, 9)], expected_version=report.version) == report.version + 1


def test_garbage_beyond_the_retention_is_deleted_and_the_live_files_stay(tmp_path: Path) -> None:
    log = DeltaRecordLog(tmp_path / "log", retention_minutes=1)
    version = _history(log)
    files_before = _data_files(tmp_path / "log")
    version = run_log_maintenance(log, version).version
    later = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=1) + WRITE_GUARD + dt.timedelta(seconds=5)
    vacuumed = collect_garbage(log, now=later)
    assert vacuumed == files_before  # every original file was removed by the maintenance commit
    assert _data_files(tmp_path / "log") == 2
    assert not (tmp_path / "log" / "segment=-1").exists()  # the dropped segment's directory too
    loaded = DeltaRecordLog(tmp_path / "log").load()
    assert loaded.version == version and loaded.tail_records == 2


def test_garbage_collection_keeps_what_a_version_inside_the_retention_reads(tmp_path: Path) -> None:
    log = DeltaRecordLog(tmp_path / "log", retention_minutes=60)
    version = _history(log)
    run_log_maintenance(log, version)
    # Everything was written just now: far inside the window, so nothing may go, however old the files look.
    assert collect_garbage(log, now=dt.datetime.now(dt.UTC) + WRITE_GUARD) == 0
    assert DeltaTable(str(tmp_path / "log"), version=version).to_pyarrow_table().num_rows == 21


def test_maintenance_behind_a_rival_commit_is_fenced(tmp_path: Path) -> None:
    log = DeltaRecordLog(tmp_path / "log")
    version = _history(log)
    DeltaRecordLog(tmp_path / "log").append([offset("rival", 0, 1)], expected_version=version)
    with pytest.raises(LogFencedError):
        maintain_log(log, version)


def test_maintenance_runs_in_the_batcher_slot_between_appends(tmp_path: Path) -> None:
    log = DeltaRecordLog(tmp_path / "log")
    version = _history(log)

    async def main() -> tuple[int, int, int]:
        batcher = CommitBatcher(log, version=version, config=BatcherConfig(linger_ms=1, min_commit_interval_ms=0))
        first = asyncio.ensure_future(batcher.append([offset("g", 7, 1)]))
        maintained = asyncio.ensure_future(batcher.run_exclusive(functools.partial(maintain_log, log)))
        last = asyncio.ensure_future(batcher.append([offset("g", 7, 2)]))
        result = await asyncio.gather(first, maintained, last)
        await batcher.close()
        return result[0], result[1], result[2]

    first, maintained, last = asyncio.run(main())
    assert first < maintained < last
    loaded = DeltaRecordLog(tmp_path / "log").load()
    assert loaded.version == last
    assert loaded.records[-2:] == (offset("g", 7, 1), offset("g", 7, 2))


def test_a_plan_made_while_the_writer_appends_commits_after_its_appends(tmp_path: Path) -> None:
    log = DeltaRecordLog(tmp_path / "log")
    version = _history(log)
    plan = plan_maintenance(log)
    assert plan is not None and plan.dropped == (-1,)
    # The writer goes on meanwhile: appends to the current segment and a new snapshot (segment 14).
    version = log.append([offset("g", 3, 30)], expected_version=version)
    version = log.write_snapshot([offset("g", n, 40 + n) for n in range(5)], expected_version=version)
    before = DeltaRecordLog(tmp_path / "log").load()

    version = commit_plan(log, plan, version)

    live = _live(tmp_path / "log")
    # Segment 10's planned files became one; the append made after the plan stays a file of its own.
    assert sorted(live.column("partition.segment").to_pylist()) == [5, 10, 10, 14]
    rows = DeltaTable(str(tmp_path / "log")).to_pyarrow_table()
    assert rows.num_rows == 5 + 4 + 5 + 2 + 1 + 5
    after = DeltaRecordLog(tmp_path / "log").load()
    assert (after.records, after.tail_records) == (before.records, before.tail_records)
    assert log.append([offset("g", 9, 9)], expected_version=version) == version + 1


def test_a_plan_made_before_a_later_maintenance_commit_is_skipped(tmp_path: Path) -> None:
    log = DeltaRecordLog(tmp_path / "log")
    version = _history(log)
    stale = plan_maintenance(log)
    assert stale is not None
    version = run_log_maintenance(log, version).version
    rows_before = DeltaTable(str(tmp_path / "log")).to_pyarrow_table().num_rows

    assert commit_plan(log, stale, version) == version
    assert DeltaTable(str(tmp_path / "log")).to_pyarrow_table().num_rows == rows_before == 16


def test_a_table_created_with_other_retention_properties_gets_the_log_retention(tmp_path: Path) -> None:
    old = DeltaRecordLog(tmp_path / "log", retention_minutes=7 * 24 * 60)
    version = _history(old)
    log = DeltaRecordLog(tmp_path / "log")
    log.load()
    report = run_log_maintenance(log, version)
    assert report.version == version + 2  # the properties, then the drop and compaction
    configuration = DeltaTable(str(tmp_path / "log")).metadata().configuration
    assert configuration["delta.deletedFileRetentionDuration"] == "interval 10 minutes"
    assert run_log_maintenance(log, report.version).version == report.version  # nothing left to do


def test_maintain_record_log_runs_in_the_batchers_commit_slot(tmp_path: Path) -> None:
    log = DeltaRecordLog(tmp_path / "log")
    version = _history(log)

    async def main() -> tuple[int, int]:
        batcher = CommitBatcher(log, version=version, config=BatcherConfig(linger_ms=1, min_commit_interval_ms=0))
        maintained = (await maintain_record_log(batcher, log)).version
        after = await batcher.append([offset("g", 8, 8)])
        await batcher.close()
        return maintained, after

    maintained, after = asyncio.run(main())
    assert after == maintained + 1
    assert len(DeltaTable(str(tmp_path / "log")).file_uris()) == 3  # segments 5 and 10, and the new append


def test_repeated_runs_past_the_retention_stay_bounded_and_report_every_step(tmp_path: Path) -> None:
    """The long-run regression: run after run with garbage collection active (``now`` past every file's
    retention) while the writer appends and snapshots, each run finishes every step, in order, the live and
    on-disk files stay bounded instead of piling up, and a load still returns the newest offsets."""
    log = DeltaRecordLog(tmp_path / "log", checkpoint_interval=3)
    later = dt.datetime.now(dt.UTC) + log.retention + WRITE_GUARD + dt.timedelta(minutes=1)

    async def main() -> list[tuple[list[str], MaintenanceReport, int, int]]:
        version = await asyncio.to_thread(log.takeover, 1, expected_version=-1)
        batcher = CommitBatcher(log, version=version, config=BatcherConfig(linger_ms=1, min_commit_interval_ms=0))
        runs = []
        for round_ in range(8):
            for n in range(4):
                await batcher.append([offset("g", n, 100 * round_ + n)])
            await batcher.snapshot([offset("g", n, 100 * round_ + n) for n in range(4)])
            await batcher.append([offset("g", 0, 100 * round_ + 50)])
            steps: list[str] = []
            report = await maintain_record_log(batcher, log, now=later, on_step=steps.append)
            runs.append((steps, report, len(DeltaTable(str(tmp_path / "log")).file_uris()),
                         _data_files(tmp_path / "log")))
        await batcher.close()
        return runs

    runs = asyncio.run(main())
    log.close()
    for steps, report, live, on_disk in runs:
        assert steps == list(STEPS)
        assert set(report.step_seconds) == set(STEPS)
        assert live <= 2  # the previous segment and the current one, each compacted to one file
        assert on_disk <= 4  # what a version inside the retention reads (the `now` shift leaves the rest garbage)
    assert sum(report.vacuumed_files for _, report, _, _ in runs) >= 8 * 5
    loaded = DeltaRecordLog(tmp_path / "log").load()
    assert {r.key: r.value for r in loaded.records} == {
        offset("g", n, 700 + n).key: offset("g", n, 750 if n == 0 else 700 + n).value for n in range(4)}
