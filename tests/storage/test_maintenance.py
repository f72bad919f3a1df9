"""The maintenance both logs run: bin-packing, commits that race writers, stale plans, old files' missing columns."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from groupcoord.storage import maintenance
from groupcoord.storage.files import CommitConflictError, FileAppend, Part, append_file
from groupcoord.storage.maintenance import Policy
from groupcoord.storage.tables import open_or_create

SCHEMA = pa.schema([pa.field("p", pa.int32(), nullable=False), pa.field("n", pa.int64(), nullable=False),
                    pa.field("extra", pa.string())])
FILE_SCHEMA = SCHEMA.remove(0)


BASE = Policy(partition_column="p", file_schema=FILE_SCHEMA, sort_by=("n",), retention=dt.timedelta(hours=1),
              fsync=False)


def _policy(**overrides: Any) -> Policy:
    return replace(BASE, **overrides)


def _append(path: Path, version: int, partition: int, numbers: range, *, extra: bool = True) -> int:
    columns = {"n": pa.array(list(numbers), pa.int64())}
    if extra:
        columns["extra"] = pa.array([f"e{n}" for n in numbers])
    append_file(path, FileAppend(version=version, parts=(Part(pa.table(columns), {"p": str(partition)}),)),
                fsync=False)
    return version


def _rows(path: Path) -> list[tuple[int, int, str | None]]:
    table = DeltaTable(str(path)).to_pyarrow_table().sort_by([("p", "ascending"), ("n", "ascending")])
    return list(zip(table.column("p").to_pylist(), table.column("n").to_pylist(), table.column("extra").to_pylist(),
                    strict=True))


def _three_files(path: Path) -> int:
    """Versions 1-3: three files of partition 0 holding 0..11; returns the version."""
    for version, start in enumerate(range(0, 12, 4), start=1):
        _append(path, version, 0, range(start, start + 4))
    return 3


@pytest.fixture
def table(tmp_path: Path) -> Path:
    open_or_create(tmp_path / "t", SCHEMA, partition_by=["p"])
    return tmp_path / "t"


def test_small_files_are_packed_in_order_up_to_the_target_and_a_large_one_stays(table: Path) -> None:
    version = 0
    for start in range(0, 40, 4):  # ten small files of partition 0, in offset order
        version = _append(table, version + 1, 0, range(start, start + 4))
    big = pa.table({"n": pa.array(range(1000, 21000), pa.int64()), "extra": pa.array([f"{n:064}" for n in range(
        20000)])})
    append_file(table, FileAppend(version=version + 1, parts=(Part(big, {"p": "0"}),)), fsync=False)
    version = _append(table, version + 2, 1, range(3))  # a partition with one file: nothing to pack
    sizes = DeltaTable(str(table)).get_add_actions(flatten=True).column("size_bytes").to_pylist()
    small, large = min(sizes), max(sizes)
    before = _rows(table)

    plan = maintenance.plan_maintenance(table, _policy(target_file_bytes=small * 4 + small // 2))
    assert plan is not None
    version = maintenance.commit_plan(table, plan, version, fsync=False)

    assert (plan.compacted, plan.added, plan.dropped) == (10, 3, ())  # runs of 4, 4 and 2 files
    assert _rows(table) == before
    live = DeltaTable(str(table)).get_add_actions(flatten=True)
    assert sorted(live.column("size_bytes").to_pylist())[-1] == large  # the large file stays as it was
    starts = sorted(zip(live.column("partition.p").to_pylist(), live.column("min.n").to_pylist(), strict=True))
    assert starts == [(0, 0), (0, 16), (0, 32), (0, 1000), (1, 0)]


def test_older_partitions_are_dropped_when_the_policy_keeps_the_newest(table: Path) -> None:
    version = 0
    for partition in (1, 2, 3):
        version = _append(table, version + 1, partition, range(2))
    plan = maintenance.plan_maintenance(table, _policy(keep_newest=2))
    assert plan is not None and plan.dropped == (1,)
    maintenance.commit_plan(table, plan, version, fsync=False)
    assert {p for p, _, _ in _rows(table)} == {2, 3}


def test_files_without_the_newer_columns_compact_with_nulls_there(table: Path) -> None:
    _append(table, 1, 0, range(2), extra=False)  # as an older format wrote it
    _append(table, 2, 0, range(2, 4))
    plan = maintenance.plan_maintenance(table, _policy())
    assert plan is not None
    maintenance.commit_plan(table, plan, 2, fsync=False)
    assert _rows(table) == [(0, 0, None), (0, 1, None), (0, 2, "e2"), (0, 3, "e3")]
    assert len(DeltaTable(str(table)).file_uris()) == 1


def test_a_plan_commits_after_the_writers_that_committed_meanwhile(table: Path) -> None:
    version = _three_files(table)
    plan = maintenance.plan_maintenance(table, _policy())
    assert plan is not None
    version = _append(table, version + 1, 0, range(12, 14))  # a producer commits after the plan was made
    with pytest.raises(CommitConflictError):
        maintenance.commit_plan(table, plan, version - 1, fsync=False)

    assert maintenance.commit_plan_when_valid(table, plan, fsync=False) == version + 1
    assert [n for _, n, _ in _rows(table)] == list(range(14))
    assert len(DeltaTable(str(table)).file_uris()) == 2  # the packed file and the producer's


def test_a_plan_whose_files_another_run_replaced_is_skipped(table: Path) -> None:
    _three_files(table)
    first, second = maintenance.plan_maintenance(table, _policy()), maintenance.plan_maintenance(table, _policy())
    assert first is not None and second is not None
    maintenance.commit_plan_when_valid(table, first, fsync=False)

    assert maintenance.commit_plan_when_valid(table, second, fsync=False) is None
    assert [n for _, n, _ in _rows(table)] == list(range(12))  # no row twice


def test_garbage_is_what_no_version_inside_the_retention_reads(table: Path) -> None:
    version = _three_files(table)
    plan = maintenance.plan_maintenance(table, _policy())
    assert plan is not None
    maintenance.commit_plan(table, plan, version, fsync=False)
    rules = _policy(retention=dt.timedelta(minutes=1))
    assert maintenance.collect_garbage(table, rules) == 0  # everything is inside the retention
    later = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=1) + maintenance.WRITE_GUARD + dt.timedelta(seconds=5)
    assert maintenance.collect_garbage(table, rules, now=later) == 3
    assert len(list(table.glob("p=0/*.parquet"))) == 1
    assert [n for _, n, _ in _rows(table)] == list(range(12))
