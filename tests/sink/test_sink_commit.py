"""The ``groupcoord-delta`` sink's commit on a real Delta table (delta-rs), without Spark: drop, trim, gap,
reset marker, concurrent commits of the same partitions, two writers of other partitions; and ``append_batch``, the
same writer for the executors-as-members engine."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from groupcoord.sink import plan as sink_plan
from groupcoord.sink.commit import append_batch, commit_batch, ensure_table
from groupcoord.sink.files import PartitionFile, write_partition_files
from groupcoord.sink.plan import BatchRange, CommitPlan, SinkBatchError, SinkGapError
from groupcoord.storage.tables import table_dataset
from groupcoord.topics.app_transactions import app_id

SCHEMA = pa.schema([("v", pa.string()), ("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64())])
GROUP = "g"


def rows(partition: int, start: int, end: int, topic: str = "t") -> pa.RecordBatch:
    """Rows ``start..end-1`` of ``topic-partition``, value ``"<partition>:<offset>"``."""
    offsets = list(range(start, end))
    return pa.RecordBatch.from_pydict({
        "v": [f"{partition}:{o}" for o in offsets], "topic": [topic] * len(offsets),
        "partition": pa.array([partition] * len(offsets), pa.int32()), "offset": pa.array(offsets, pa.int64())},
        schema=SCHEMA)


def table_rows(path: Path) -> list[tuple[int, int]]:
    """Sorted ``(partition, offset)`` of every row of the table."""
    data = table_dataset(DeltaTable(str(path))).to_table(columns=["partition", "offset"])
    return sorted(zip(data.column("partition").to_pylist(), data.column("offset").to_pylist(), strict=True))


def no_resets() -> Mapping[tuple[str, int], int]:
    """No reset marker."""
    return {}


def write(path: Path, *batches: pa.RecordBatch) -> list[PartitionFile]:
    """What one executor task writes."""
    return write_partition_files(iter(batches), path, SCHEMA)


@pytest.fixture
def table(tmp_path: Path) -> Path:
    """An empty sink table."""
    path = tmp_path / "sink"
    ensure_table(str(path), SCHEMA)
    return path


def test_one_commit_holds_the_rows_and_one_transaction_per_partition(table: Path) -> None:
    files = write(table, rows(0, 0, 5), rows(1, 0, 3), rows(0, 5, 7))
    assert sorted((f.partition, f.first, f.last) for f in files) == [(0, 0, 6), (1, 0, 2)]  # one file per partition
    done = commit_batch(str(table), SCHEMA, GROUP, {("t", 0): BatchRange(0, 7), ("t", 1): BatchRange(0, 3),
                                                    ("t", 2): BatchRange(0, 4)}, files, resets=no_resets)
    delta = DeltaTable(str(table))
    assert (done.table_version, done.rows) == (delta.version(), 10)
    assert delta.transaction_version(app_id(GROUP, "t", 0)) == 7
    # partition 2's rows were all filtered out by the query: its transaction still records the batch's end
    assert delta.transaction_version(app_id(GROUP, "t", 2)) == 4
    assert done.versions == {("t", 0): 7, ("t", 1): 3, ("t", 2): 4}
    assert table_rows(table) == [(0, o) for o in range(7)] + [(1, o) for o in range(3)]


def test_a_replayed_batch_writes_nothing_and_reports_the_versions(table: Path) -> None:
    ranges = {("t", 0): BatchRange(0, 5)}
    commit_batch(str(table), SCHEMA, GROUP, ranges, write(table, rows(0, 0, 5)), resets=no_resets)
    version = DeltaTable(str(table)).version()
    replay = write(table, rows(0, 0, 5))
    done = commit_batch(str(table), SCHEMA, GROUP, ranges, replay, resets=no_resets)
    assert (done.table_version, done.rows, done.versions) == (None, 0, {("t", 0): 5})
    assert DeltaTable(str(table)).version() == version
    assert not (table / replay[0].path).exists()  # the dropped file is removed
    assert table_rows(table) == [(0, o) for o in range(5)]


def test_a_file_straddling_the_version_is_rewritten_from_it(table: Path) -> None:
    commit_batch(str(table), SCHEMA, GROUP, {("t", 0): BatchRange(0, 5)}, write(table, rows(0, 0, 5)),
                 resets=no_resets)
    done = commit_batch(str(table), SCHEMA, GROUP, {("t", 0): BatchRange(3, 9)}, write(table, rows(0, 3, 9)),
                        resets=no_resets)
    assert (done.rows, done.versions) == (4, {("t", 0): 9})
    assert table_rows(table) == [(0, o) for o in range(9)]


def test_a_gap_fails_naming_the_partition_and_the_offsets(table: Path) -> None:
    commit_batch(str(table), SCHEMA, GROUP, {("t", 0): BatchRange(0, 5)}, write(table, rows(0, 0, 5)),
                 resets=no_resets)
    with pytest.raises(SinkGapError, match=r"gap in t-0 of group 'g': the batch starts at offset 8 .* up to offset 5"):
        commit_batch(str(table), SCHEMA, GROUP, {("t", 0): BatchRange(8, 10)}, write(table, rows(0, 8, 10)),
                     resets=no_resets)
    with pytest.raises(SinkGapError):  # a reset marker elsewhere does not allow it
        commit_batch(str(table), SCHEMA, GROUP, {("t", 0): BatchRange(8, 10)}, write(table, rows(0, 8, 10)),
                     resets=lambda: {("t", 0): 7})
    assert table_rows(table) == [(0, o) for o in range(5)]


def test_a_reset_marker_at_the_batch_start_allows_the_jump(table: Path) -> None:
    commit_batch(str(table), SCHEMA, GROUP, {("t", 0): BatchRange(0, 5)}, write(table, rows(0, 0, 5)),
                 resets=no_resets)
    done = commit_batch(str(table), SCHEMA, GROUP, {("t", 0): BatchRange(8, 10)}, write(table, rows(0, 8, 10)),
                        resets=lambda: {("t", 0): 8})
    assert done.versions == {("t", 0): 10}
    assert table_rows(table) == [(0, o) for o in [0, 1, 2, 3, 4, 8, 9]]


def test_rows_outside_the_sources_batch_are_refused(table: Path) -> None:
    with pytest.raises(SinkBatchError, match="rows of t-1 that the source's batch did not read"):
        commit_batch(str(table), SCHEMA, GROUP, {("t", 0): BatchRange(0, 5)}, write(table, rows(1, 0, 5)),
                     resets=no_resets)
    with pytest.raises(SinkBatchError, match=r"offsets 0\.\.4 outside the source's batch 0\.\.2"):
        commit_batch(str(table), SCHEMA, GROUP, {("t", 0): BatchRange(0, 3)}, write(table, rows(0, 0, 5)),
                     resets=no_resets)


def test_a_concurrent_commit_of_the_same_partition_makes_the_loser_plan_again(table: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The new owner commits 0..9 of t-0 while a replay of the old owner's batch 0..9 is between its snapshot and
    its commit: delta-rs refuses the replay's commit, which plans again on the new snapshot and drops its rows."""
    planned: list[CommitPlan] = []
    original = sink_plan.plan_commit
    raced: list[bool] = []

    def racing_plan(*args: Any, **kwargs: Any) -> CommitPlan:
        plan = original(*args, **kwargs)
        if not raced:
            raced.append(True)
            commit_batch(str(table), SCHEMA, GROUP, {("t", 0): BatchRange(0, 10)}, write(table, rows(0, 0, 10)),
                         resets=no_resets)
        else:
            planned.append(plan)
        return plan

    monkeypatch.setattr("groupcoord.sink.commit.plan_commit", racing_plan)
    done = commit_batch(str(table), SCHEMA, GROUP, {("t", 0): BatchRange(0, 10)}, write(table, rows(0, 0, 10)),
                        resets=no_resets)
    assert done.attempts == 2
    assert [bool(p.keep) for p in planned] == [True, False]  # the winner's plan, then the loser's second: nothing
    assert (done.table_version, done.versions) == (None, {("t", 0): 10})
    assert table_rows(table) == [(0, o) for o in range(10)]


def test_two_writers_of_other_partitions_both_commit(table: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    original = sink_plan.plan_commit
    raced: list[bool] = []

    def racing_plan(*args: Any, **kwargs: Any) -> CommitPlan:
        if not raced:
            raced.append(True)
            commit_batch(str(table), SCHEMA, GROUP, {("t", 1): BatchRange(0, 4)}, write(table, rows(1, 0, 4)),
                         resets=no_resets)
        return original(*args, **kwargs)

    monkeypatch.setattr("groupcoord.sink.commit.plan_commit", racing_plan)
    done = commit_batch(str(table), SCHEMA, GROUP, {("t", 0): BatchRange(0, 6)}, write(table, rows(0, 0, 6)),
                        resets=no_resets)
    assert done.attempts == 1  # delta-rs rebased the append: no shared app id
    assert table_rows(table) == [(0, o) for o in range(6)] + [(1, o) for o in range(4)]
    values = table_dataset(DeltaTable(str(table))).to_table().column("v")
    assert pc.count_distinct(values).as_py() == 10


def test_an_abort_after_the_delta_commit_keeps_the_committed_files(table: Path) -> None:
    """Spark aborts a batch whose commit worker died after its Delta commit: the files that commit added are the
    table's and stay; a file the table does not hold (a task attempt's leftover) is removed."""
    from groupcoord.sink.data_sink import DeltaStreamWriter, SinkFiles
    from groupcoord.sink.options import SinkOptions

    committed = write(table, rows(0, 0, 5))
    commit_batch(str(table), SCHEMA, GROUP, {("t", 0): BatchRange(0, 5)}, committed, resets=no_resets)
    leftover = write(table, rows(1, 0, 3))
    writer = DeltaStreamWriter(SinkOptions(path=str(table), group_id=GROUP, checkpoint="/unused", state_root="/unused"),
                               SCHEMA)
    writer.abort([SinkFiles(tuple(committed)), SinkFiles(tuple(leftover)), None], 0)
    assert (table / committed[0].path).exists()
    assert not (table / leftover[0].path).exists()
    assert table_rows(table) == [(0, o) for o in range(5)]


# --- append_batch: the same writer for a member that reads its records itself -------------------------------------

def test_append_batch_writes_and_commits_in_one_process_with_the_tables_columns(table: Path) -> None:
    """The executors-as-members engine's path: its rows carry more columns than the table (left out); one commit,
    one transaction per partition; a replay of the same ranges writes nothing."""
    def read(partition: int, start: int, end: int) -> pa.RecordBatch:
        batch = rows(partition, start, end)
        return batch.append_column("timestampType", pa.array([0] * batch.num_rows, pa.int32()))

    ranges = {("t", 0): BatchRange(0, 4), ("t", 1): BatchRange(0, 2)}
    done = append_batch(str(table), GROUP, ranges, [read(0, 0, 4), read(1, 0, 2)], resets=no_resets,
                        reader="member-1")
    assert (done.rows, done.versions) == (6, {("t", 0): 4, ("t", 1): 2})
    assert table_rows(table) == [(0, o) for o in range(4)] + [(1, 0), (1, 1)]
    assert DeltaTable(str(table)).history(1)[0]["groupcoord_member"] == "member-1"
    again = append_batch(str(table), GROUP, ranges, [rows(0, 0, 4), rows(1, 0, 2)], resets=no_resets,
                         table=DeltaTable(str(table)))
    assert (again.table_version, again.rows) == (None, 0)
    assert len(list(table.glob("*.parquet"))) == 2  # the replay's files are gone


def test_append_batch_keeps_each_groups_transactions_apart(table: Path) -> None:
    ranges = {("t", 0): BatchRange(0, 4)}
    append_batch(str(table), "a", ranges, [rows(0, 0, 4)], resets=no_resets)
    done = append_batch(str(table), "b", ranges, [rows(0, 0, 4)], resets=no_resets)
    assert (done.rows, done.versions) == (4, {("t", 0): 4})
    assert len(table_rows(table)) == 8


def test_append_batch_removes_its_files_when_the_commit_is_refused(table: Path) -> None:
    append_batch(str(table), GROUP, {("t", 0): BatchRange(0, 5)}, [rows(0, 0, 5)], resets=no_resets)
    with pytest.raises(SinkGapError):
        append_batch(str(table), GROUP, {("t", 0): BatchRange(8, 10)}, [rows(0, 8, 10)], resets=no_resets)
    assert len(list(table.glob("*.parquet"))) == 1
    done = append_batch(str(table), GROUP, {("t", 0): BatchRange(8, 10)}, [rows(0, 8, 10)],
                        resets=lambda: {("t", 0): 8})  # the jump its writer chose (a reset)
    assert done.versions == {("t", 0): 10}


def test_a_task_reading_one_partition_writes_it_as_one_file_in_offset_order(tmp_path: Path) -> None:
    in_order = write(tmp_path, rows(2, 0, 4), rows(2, 4, 6))
    shuffled = write(tmp_path, rows(3, 4, 6), rows(3, 0, 4))

    assert [(f.partition, f.first, f.last, f.rows) for f in [*in_order, *shuffled]] == [(2, 0, 5, 6), (3, 0, 5, 6)]
    for file in [*in_order, *shuffled]:
        assert pq.read_table(tmp_path / file.path).column("offset").to_pylist() == list(range(6))
