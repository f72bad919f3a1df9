"""File compaction of the topic logs and the materialized state tables: fewer files, same data, protocol (1,2)."""

from __future__ import annotations

import datetime as dt
import threading
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable

from groupcoord.coordinator.records import OffsetValue, new_offset_commit_record
from groupcoord.state.materializer import Materializer, MaterializerConfig
from groupcoord.state.schema import OFFSETS
from groupcoord.state.views import read_view
from groupcoord.state_root import StateRoot
from groupcoord.storage.maintenance import WRITE_GUARD
from groupcoord.topics import ProducerRecord, TopicCatalog, TopicLog, TopicsConfig
from groupcoord.topics.maintenance import maintain_topic_logs

PARTITIONS = 3


def _data_files(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*.parquet") if "_delta_log" not in p.parts}


def _assert_protocol_1_2(path: Path) -> None:
    protocol = DeltaTable(str(path)).protocol()
    assert (protocol.min_reader_version, protocol.min_writer_version) == (1, 2)
    assert not protocol.reader_features and not protocol.writer_features


def _produce(log: TopicLog, batches: int, tag: str) -> None:
    for n in range(batches):
        log.produce([ProducerRecord(f"{tag}-{n}-{p}".encode(), partition=p) for p in range(PARTITIONS)])


def test_topic_log_compaction_keeps_offsets_dense_while_producers_write(tmp_path: Path) -> None:
    root = StateRoot.open(tmp_path / "root", create=True)
    config = TopicsConfig(commit_backoff_ms=1, commit_timeout_ms=30000)
    TopicCatalog(root, config=config).create("events", PARTITIONS)
    producer = TopicLog(root, "events", config=config)
    _produce(producer, 12, "before")
    path = root.topic_path("events").local_path
    assert len(DeltaTable(str(path)).file_uris()) == 12 * PARTITIONS

    concurrent = threading.Thread(target=_produce, args=(TopicLog(root, "events", config=config), 8, "during"))
    concurrent.start()
    reports = maintain_topic_logs(root, retention_hours=24)
    concurrent.join(timeout=60)

    assert [r.path for r in reports] == [str(path)]
    assert reports[0].compacted_files >= 12 * PARTITIONS and reports[0].added_files == PARTITIONS
    _assert_protocol_1_2(path)
    # Compaction bin-packs within a partition: at most one file per partition plus the concurrent produces' files.
    assert len(DeltaTable(str(path)).file_uris()) <= PARTITIONS + 8 * PARTITIONS
    reader = TopicLog(root, "events", config=config)
    for partition in range(PARTITIONS):
        rows = reader.read(partition, 0, max_records=1000)
        assert rows.column("offset").to_pylist() == list(range(20))
        values = [v.decode() for v in rows.column("value").to_pylist()]
        assert values[:12] == [f"before-{n}-{partition}" for n in range(12)]
        assert sorted(values[12:]) == sorted(f"during-{n}-{partition}" for n in range(8))
        assert reader.log_end_offset(partition) == 20

    # A quiet run leaves every partition in one file, and the replaced files are gone from disk once past the
    # retention (and the guard that protects a file written but not yet committed).
    maintain_topic_logs(root, retention_hours=0, now=dt.datetime.now(dt.UTC) + WRITE_GUARD + dt.timedelta(seconds=5))
    assert len(DeltaTable(str(path)).file_uris()) == PARTITIONS
    live = {str(Path(uri.removeprefix("file://")).relative_to(path)) for uri in DeltaTable(str(path)).file_uris()}
    assert _data_files(path) == live


def test_topic_log_maintenance_without_topics_does_nothing(tmp_path: Path) -> None:
    root = StateRoot.open(tmp_path / "root", create=True)
    assert maintain_topic_logs(root, retention_hours=0) == []


def test_materialized_tables_compact_to_one_file_with_the_same_views(tmp_path: Path) -> None:
    root = StateRoot.open(tmp_path / "root", create=True)
    materializer = Materializer(root, config=MaterializerConfig(retention_hours=0))
    now = dt.datetime.now(dt.UTC)
    for version in range(1, 9):
        records = [new_offset_commit_record("g", "t", p, OffsetValue(
            offset=version * 10 + p, leader_epoch=-1, metadata="", commit_timestamp_ms=1000)) for p in range(4)]
        materializer.apply(records, log_version=version, epoch=1, now=now)
    path = root.state_table_path(OFFSETS.name).local_path
    before = read_view(root, OFFSETS).sort_by("partition")
    assert len(DeltaTable(str(path)).file_uris()) == 8

    reports = materializer.maintain()

    assert [r.path for r in reports] == [str(path)]
    assert (reports[0].files_removed, reports[0].files_added) == (8, 1)
    after = read_view(root, OFFSETS).sort_by("partition")
    assert after.equals(before)
    assert after.column("offset").to_pylist() == [80, 81, 82, 83]
    _assert_protocol_1_2(path)
    assert len(_data_files(path)) == 1
    assert pa.types.is_timestamp(pa.schema(DeltaTable(str(path)).schema()).field("commit_time").type)
