"""Delta-specific behaviour of the record log: table format, checkpoints, pruning, and failure classification."""

from __future__ import annotations

import multiprocessing
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from groupcoord.log.base import LogFencedError, StorageUnavailableError
from groupcoord.log.delta import DeltaRecordLog
from groupcoord.log.lease import LeaseTable
from tests.log.storage_helpers import offset


def _fill(log: DeltaRecordLog, commits: int, *, start: int = -1) -> int:
    version = start
    for n in range(commits):
        version = log.append([offset("g", n % 4, n)], expected_version=version)
    return version


def test_table_stays_on_protocol_1_2_with_utc_timestamps(tmp_path: Path) -> None:
    log = DeltaRecordLog(tmp_path / "log")
    _fill(log, 2)
    table = DeltaTable(str(tmp_path / "log"))
    protocol = table.protocol()
    assert (protocol.min_reader_version, protocol.min_writer_version) == (1, 2)
    assert not protocol.writer_features and not protocol.reader_features
    schema = pa.schema(table.schema())
    assert schema.field("written_at").type == pa.timestamp("us", tz="UTC")
    assert table.metadata().partition_columns == ["segment"]
    rows = table.to_pyarrow_table().sort_by("log_version")
    assert rows.column("log_version").to_pylist() == [0, 1]
    assert rows.column("seq").to_pylist() == [0, 0]


def test_rows_carry_their_commit_version_epoch_and_order_within_the_batch(tmp_path: Path) -> None:
    log = DeltaRecordLog(tmp_path / "log")
    version = log.takeover(7, expected_version=-1)
    log.append([offset("g", 0, 1), offset("g", 1, 1), offset("g", 2, 1)], expected_version=version)
    rows = DeltaTable(str(tmp_path / "log")).to_pyarrow_table(filters=[("log_version", "=", 1)]).sort_by("seq")
    assert rows.column("seq").to_pylist() == [0, 1, 2]
    assert set(rows.column("epoch").to_pylist()) == {7}
    assert rows.column("key").to_pylist() == ["g/t/0", "g/t/1", "g/t/2"]


def test_a_checkpoint_is_written_every_checkpoint_interval_commits(tmp_path: Path) -> None:
    log = DeltaRecordLog(tmp_path / "log", checkpoint_interval=5)
    _fill(log, 12)
    log.close()  # checkpoints are written in the background: wait for them
    # Version 4's checkpoint is skipped when the checkpointer only runs once 9 is committed (a loaded machine): the
    # newest due checkpoint supersedes an older one that is still waiting.
    assert log.checkpoints_written in ((4, 9), (9,))
    checkpoints = sorted(p.name for p in (tmp_path / "log" / "_delta_log").glob("*.checkpoint.parquet"))
    assert checkpoints == [f"{v:020d}.checkpoint.parquet" for v in log.checkpoints_written]
    assert DeltaRecordLog(tmp_path / "log").load().version == 11


def test_load_reads_only_the_newest_segment(tmp_path: Path) -> None:
    log = DeltaRecordLog(tmp_path / "log")
    version = _fill(log, 5)
    version = log.write_snapshot([offset("g", 0, 100)], expected_version=version)
    log.append([offset("g", 1, 101)], expected_version=version)
    # Destroy the old segment's data files: a load that still opened them would fail.
    shutil.rmtree(tmp_path / "log" / "segment=-1")
    loaded = DeltaRecordLog(tmp_path / "log").load()
    assert loaded.records == (offset("g", 0, 100), offset("g", 1, 101))


def test_a_broken_log_directory_is_storage_unavailable_not_fenced(tmp_path: Path) -> None:
    log = DeltaRecordLog(tmp_path / "log")
    version = _fill(log, 3)
    delta_log = tmp_path / "log" / "_delta_log"
    delta_log.rename(tmp_path / "moved")
    delta_log.write_text("not a directory")
    with pytest.raises(StorageUnavailableError):
        log.append([offset("g", 0, 9)], expected_version=version)
    with pytest.raises(StorageUnavailableError):
        DeltaRecordLog(tmp_path / "log").append([offset("g", 0, 9)], expected_version=version)
    delta_log.unlink()
    (tmp_path / "moved").rename(delta_log)
    assert log.append([offset("g", 0, 9)], expected_version=version) == version + 1


def test_expecting_a_version_the_log_has_not_reached_is_fenced(tmp_path: Path) -> None:
    log = DeltaRecordLog(tmp_path / "log")
    version = _fill(log, 2)
    with pytest.raises(LogFencedError):
        DeltaRecordLog(tmp_path / "log").append([offset("g", 0, 1)], expected_version=version + 3)


def _race_append(path: str, expected: int, name: str, start: multiprocessing.synchronize.Barrier,
                 results: multiprocessing.queues.Queue[tuple[str, str]]) -> None:
    log = DeltaRecordLog(path)
    start.wait()
    try:
        log.append([offset(name, 0, 1)], expected_version=expected, batch_id=name)
        results.put((name, "won"))
    except LogFencedError:
        results.put((name, "fenced"))
    except StorageUnavailableError as exc:
        results.put((name, f"unavailable: {exc}"))


@pytest.mark.integration
@pytest.mark.parametrize("expected", [-1, 2], ids=["creating", "appending"])
def test_processes_racing_at_one_version_leave_exactly_one_winner(tmp_path: Path, expected: int) -> None:
    path = str(tmp_path / "log")
    if expected >= 0:
        _fill(DeltaRecordLog(path), expected + 1)
    ctx = multiprocessing.get_context("spawn")
    racers = 4
    start = ctx.Barrier(racers)
    results: multiprocessing.queues.Queue[tuple[str, str]] = ctx.Queue()
    procs = [ctx.Process(target=_race_append, args=(path, expected, f"w{i}", start, results)) for i in range(racers)]
    for proc in procs:
        proc.start()
    outcomes = dict(results.get(timeout=60) for _ in procs)
    for proc in procs:
        proc.join(timeout=30)
    winners = [name for name, outcome in outcomes.items() if outcome == "won"]
    assert len(winners) == 1, outcomes
    assert sorted(outcomes.values()) == ["fenced"] * (racers - 1) + ["won"]
    log = DeltaRecordLog(path)
    assert log.version() == expected + 1
    assert log.batch_ids_after(expected) == {expected + 1: winners[0]}


_READER = """
import sys
from groupcoord.log.delta import DeltaRecordLog
from groupcoord.log.lease import LeaseTable
path = sys.argv[1]
log = DeltaRecordLog(path + "/log")
loaded = log.load()
lease = LeaseTable(path + "/lease").read_current()
print(len(loaded.records), loaded.version, lease.epoch if lease else None)
"""


@pytest.mark.integration
def test_processes_that_read_the_log_and_the_lease_exit_cleanly(tmp_path: Path) -> None:
    # Reads through delta-rs's default filesystem handler could abort the process at exit (rc 134); the log and
    # the lease read through pyarrow's local filesystem.
    log = DeltaRecordLog(tmp_path / "log", checkpoint_interval=2)
    _fill(log, 5)
    log.close()
    assert LeaseTable(tmp_path / "lease").try_acquire("h", "127.0.0.1:1") is not None
    procs = [subprocess.Popen([sys.executable, "-c", _READER, str(tmp_path)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outputs = [proc.communicate(timeout=120) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0, 0], [err for _, err in outputs]
    assert {out.split() == ["5", "4", "1"] for out, _ in outputs} == {True}
