"""The record log's own Delta appends: delta-rs reads them back, statistics prune, and versions are exclusive."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from groupcoord.coordinator.encoded import EncodedRecord
from groupcoord.coordinator.hard_state import HardStateStore
from groupcoord.coordinator.records import (
    OffsetValue,
    decode_record,
    encode_record,
    new_offset_commit_record,
    new_offset_tombstone,
)
from groupcoord.log.base import LoadedLog
from groupcoord.log.delta import BATCH_ID_KEY, EPOCH_KEY, DeltaRecordLog
from groupcoord.storage.files import CommitConflictError, FileAppend, Part, append_file, commit_path, file_stats
from tests.log.storage_helpers import offset


def test_delta_rs_reads_appended_batches_with_their_commit_info_and_statistics(tmp_path: Path) -> None:
    log = DeltaRecordLog(tmp_path / "log")
    version = log.takeover(3, expected_version=-1)
    version = log.append([offset("g", p, 10 + p) for p in range(5)], expected_version=version, batch_id="b-1")

    table = DeltaTable(str(tmp_path / "log"))
    assert table.version() == version == 1
    newest = table.history(1)[0]
    assert (newest["operation"], newest[BATCH_ID_KEY], newest[EPOCH_KEY]) == ("WRITE", "b-1", 3)
    rows = table.to_pyarrow_table(filters=[("log_version", "=", 1)]).sort_by("seq")
    assert rows.column("key").to_pylist() == [f"g/t/{p}" for p in range(5)]
    assert set(rows.column("segment").to_pylist()) == {-1}
    actions = pa.table(table.get_add_actions(flatten=True)).sort_by("min.log_version")
    assert actions.column("min.log_version").to_pylist() == [0, 1]
    assert actions.column("max.seq").to_pylist() == [0, 4]
    assert actions.column("num_records").to_pylist() == [1, 5]
    # A file pruned by its statistics is never opened: delete it, and a read of other versions still works.
    (tmp_path / "log" / actions.column("path")[1].as_py()).unlink()
    assert table.to_pyarrow_table(filters=[("log_version", "=", 0)]).num_rows == 1


def test_timestamp_statistics_cover_the_rows_at_millisecond_precision() -> None:
    at = dt.datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=dt.UTC)
    rows = pa.table({"t": pa.array([at, at + dt.timedelta(microseconds=1)], pa.timestamp("us", tz="UTC")),
                     "n": pa.array([2, None], pa.int64()), "s": pa.array(["a", "b"])})
    stats = file_stats(rows)
    assert stats["numRecords"] == 2
    assert stats["minValues"] == {"t": "2026-01-02T03:04:05.123Z", "n": 2}
    assert stats["maxValues"] == {"t": "2026-01-02T03:04:05.124Z", "n": 2}
    assert stats["nullCount"] == {"t": 0, "n": 1, "s": 0}


def test_an_existing_version_is_never_overwritten(tmp_path: Path) -> None:
    log = DeltaRecordLog(tmp_path / "log")
    version = log.append([offset("g", 0, 1)], expected_version=-1)
    version = log.append([offset("g", 0, 2)], expected_version=version)
    before = commit_path(tmp_path / "log", version).read_bytes()
    rows = pa.table({"x": pa.array([1], pa.int64())})
    with pytest.raises(CommitConflictError, match="already exists"):
        append_file(tmp_path / "log", FileAppend(version=version, parts=(Part(rows),)))
    assert commit_path(tmp_path / "log", version).read_bytes() == before
    assert not list((tmp_path / "log" / "_delta_log").glob("_commit_*"))  # no temporary file left behind
    assert json.loads(before.splitlines()[0])["commitInfo"]["readVersion"] == version - 1


def test_checkpoints_are_written_in_the_background_and_read_by_a_new_reader(tmp_path: Path) -> None:
    log = DeltaRecordLog(tmp_path / "log", checkpoint_interval=3)
    version = -1
    for n in range(7):
        version = log.append([offset("g", n, n)], expected_version=version)
    log.close()
    assert log.checkpoints_written == (2, 5)
    last = json.loads((tmp_path / "log" / "_delta_log" / "_last_checkpoint").read_text())
    assert last["version"] == 5
    assert len(DeltaRecordLog(tmp_path / "log").load().records) == 7


def _state(records: tuple[EncodedRecord, ...]) -> object:
    store = HardStateStore()
    for record in records:
        store.replay(decode_record(record))
    return store.snapshot()


def test_a_compacted_load_keeps_the_latest_record_per_key_and_replays_to_the_same_state() -> None:
    def commit(group: str, partition: int, value: int | None) -> EncodedRecord:
        if value is None:
            return encode_record(new_offset_tombstone(group, "t", partition))
        return encode_record(new_offset_commit_record(group, "t", partition, OffsetValue(
            offset=value, leader_epoch=-1, metadata="", commit_timestamp_ms=1)))

    records = (commit("a", 0, 1), commit("a", 1, 1), commit("b", 0, 5), commit("a", 0, 2), commit("b", 0, None),
               commit("a", 1, 3), commit("b", 0, 6))
    loaded = LoadedLog(records, version=9, epoch=2, tail_records=7)

    compacted = loaded.compacted()

    assert compacted.records == (commit("a", 0, 2), commit("a", 1, 3), commit("b", 0, 6))
    assert (compacted.version, compacted.epoch, compacted.tail_records) == (9, 2, 7)
    assert _state(compacted.records) == _state(records)
    deleted = LoadedLog((*records, commit("a", 1, None)), version=10).compacted()
    assert deleted.records[-1] == commit("a", 1, None)
    assert _state(deleted.records) == _state((*records, commit("a", 1, None)))


def test_an_append_makes_its_files_and_every_new_directory_entry_durable_before_linking_the_commit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import groupcoord.storage.files as files

    log = DeltaRecordLog(tmp_path / "log")
    version = log.append([offset("g", 0, 1)], expected_version=-1)
    synced: list[Path] = []
    real_link = os.link

    def recording(path: Path) -> None:
        synced.append(path)

    def link(source: str, target: Path) -> None:
        synced.append(Path("<link>"))
        real_link(source, target)

    monkeypatch.setattr(files, "_fsync_path", recording)
    monkeypatch.setattr(files, "_fsync_dir", recording)
    monkeypatch.setattr(os, "link", link)
    version = log.write_snapshot([offset("g", 0, 1)], expected_version=version)  # opens a new segment directory

    root, segment = tmp_path / "log", tmp_path / "log" / f"segment={version}"
    before_link = synced[:synced.index(Path("<link>"))]
    [data_file] = segment.glob("*.parquet")
    assert {data_file, segment, root} <= set(before_link)
    assert synced[-1] == root / "_delta_log"  # the commit's own entry, after the link
    synced.clear()
    log.append([offset("g", 0, 2)], expected_version=version)  # the directory exists now: no need for the root
    assert root not in synced


def test_a_coordinator_with_log_fsync_false_acknowledges_commits_without_an_fsync(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``spark.groupcoord.log.fsync=false`` (Kafka's default durability: the page cache) reaches the record log: the
    commit is acknowledged and read back, and nothing was fsynced on the way."""
    import groupcoord.storage.files as files
    from groupcoord.admin.describe import committed_offsets
    from groupcoord.admin.wire import AdminClient
    from groupcoord.config import resolve_config
    from groupcoord.host.background import BackgroundCoordinator
    from groupcoord.state_root import StateRoot
    from groupcoord.topics import TopicCatalog

    synced: list[Path] = []
    monkeypatch.setattr(files, "_fsync_path", synced.append)
    monkeypatch.setattr(files, "_fsync_dir", synced.append)
    root = StateRoot.open(tmp_path / "root", create=True)
    TopicCatalog(root).create("orders", 1)
    config = resolve_config(spark_conf={"spark.groupcoord.log.fsync": "false"})
    with BackgroundCoordinator(root, config, listen="127.0.0.1:0") as coordinator, \
            AdminClient(str(coordinator.address), timeout_ms=10_000) as admin:
        assert {e.name for e in admin.commit_offsets("billing", {("orders", 0): 7}).values()} == {"NONE"}
    assert not [p for p in synced if "log" in p.parts], synced
    assert committed_offsets(root, "billing") == {("orders", 0): 7}  # the stopped coordinator flushed its state
