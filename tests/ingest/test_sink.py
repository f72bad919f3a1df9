"""The exactly-once sink on a real Delta table: app transactions per partition, skips, trims and conflicts."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable
from kafka.structs import TopicPartition

from groupcoord.ingest.sink import DeltaSink, PartitionBatch, app_id
from groupcoord.topics.log_table import CREATE_TIME, HEADER_TYPE, NO_COMPRESSION, TOPIC_LOG_SCHEMA

TP0 = TopicPartition("events", 0)
TP1 = TopicPartition("events", 1)


def records(partition: int, start: int, end: int) -> pa.Table:
    """Topic-log rows ``start..end-1`` of ``partition`` with value ``b"p<partition>-<offset>"`` (and one header)."""
    offsets = list(range(start, end))
    return pa.table({
        "partition": pa.array([partition] * len(offsets), pa.int32()),
        "offset": pa.array(offsets, pa.int64()),
        "timestamp": pa.array([datetime(2024, 5, 1, tzinfo=UTC)] * len(offsets), pa.timestamp("us", tz="UTC")),
        "key": pa.array([None] * len(offsets), pa.binary()),
        "value": pa.array([f"p{partition}-{o}".encode() for o in offsets], pa.binary()),
        "headers": pa.array([[("h", f"{o}".encode())] for o in offsets], pa.list_(HEADER_TYPE)),
        "timestamp_type": pa.array([CREATE_TIME] * len(offsets), pa.int32()),
        "compression": pa.array([NO_COMPRESSION] * len(offsets), pa.string()),
    }, schema=TOPIC_LOG_SCHEMA)


def batch(tp: TopicPartition, start: int, end: int) -> PartitionBatch:
    """A batch of ``tp`` holding offsets ``start..end-1``."""
    return PartitionBatch(tp, start, end, records(tp.partition, start, end))


def sink_offsets(sink: DeltaSink) -> list[tuple[int, int]]:
    """Sorted ``(partition, offset)`` of every sink row."""
    table = sink.read_all()
    return sorted(zip(table.column("partition").to_pylist(), table.column("offset").to_pylist(), strict=True))


def test_append_records_one_transaction_per_partition_at_the_batch_end(tmp_path: Path) -> None:
    sink = DeltaSink(tmp_path / "sink", "g")
    outcome = sink.append([batch(TP0, 0, 5), batch(TP1, 0, 3)])
    assert (outcome.status, outcome.rows) == ("written", 8)
    table = DeltaTable(str(tmp_path / "sink"))
    assert table.transaction_version(app_id("g", TP0)) == 5
    assert table.transaction_version("g/events/1") == 3
    assert sink.versions([TP0, TP1, TopicPartition("events", 2)]) == {TP0: 5, TP1: 3, TopicPartition("events", 2): None}
    assert sink.row_count() == 8
    assert sink.read_all().column("topic").unique().to_pylist() == ["events"]


def test_a_replayed_batch_is_skipped(tmp_path: Path) -> None:
    sink = DeltaSink(tmp_path / "sink", "g")
    sink.append([batch(TP0, 0, 5)])
    version = sink.table().version()
    outcome = sink.append([batch(TP0, 0, 5)])
    assert outcome.status == "skipped"
    assert sink.table().version() == version
    assert sink_offsets(sink) == [(0, o) for o in range(5)]


def test_a_batch_overlapping_the_sink_is_trimmed_to_the_new_rows(tmp_path: Path) -> None:
    sink = DeltaSink(tmp_path / "sink", "g")
    sink.append([batch(TP0, 0, 5)])
    outcome = sink.append([batch(TP0, 2, 9), batch(TP1, 0, 2)])
    assert (outcome.status, outcome.rows) == ("written", 6)
    assert sink_offsets(sink) == [(0, o) for o in range(9)] + [(1, 0), (1, 1)]
    assert sink.versions([TP0, TP1]) == {TP0: 9, TP1: 2}


def test_groups_have_separate_transactions_in_one_sink(tmp_path: Path) -> None:
    DeltaSink(tmp_path / "sink", "a").append([batch(TP0, 0, 4)])
    other = DeltaSink(tmp_path / "sink", "b")
    assert other.versions([TP0]) == {TP0: None}
    assert other.append([batch(TP0, 0, 4)]).status == "written"
    assert other.row_count() == 8


class RacingSink(DeltaSink):
    """A sink whose next commit is preceded by another writer's append (between its read and its commit)."""

    def __init__(self, path: Path, group_id: str, competitor: list[PartitionBatch]) -> None:
        super().__init__(path, group_id)
        self.competitor = competitor

    def _commit(self, table: DeltaTable, rows: pa.Table, ends: Mapping[tuple[str, int], int]) -> None:
        if self.competitor:
            DeltaSink(self.path, "g").append(self.competitor)
            self.competitor = []
        super()._commit(table, rows, ends)


def test_the_loser_of_a_concurrent_append_of_the_same_partition_drops_its_batch(tmp_path: Path) -> None:
    DeltaSink(tmp_path / "sink", "g").append([batch(TP0, 0, 1)])
    loser = RacingSink(tmp_path / "sink", "g", competitor=[batch(TP0, 1, 6)])
    outcome = loser.append([batch(TP0, 1, 4)])
    assert outcome.status == "conflict"
    assert outcome.versions == {TP0: 6}
    assert sink_offsets(loser) == [(0, o) for o in range(6)]


def test_concurrent_appends_of_different_partitions_both_land(tmp_path: Path) -> None:
    DeltaSink(tmp_path / "sink", "g").append([batch(TP0, 0, 1)])
    second = RacingSink(tmp_path / "sink", "g", competitor=[batch(TP0, 1, 3)])
    assert second.append([batch(TP1, 0, 2)]).status == "written"
    assert sink_offsets(second) == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1)]
    assert second.versions([TP0, TP1]) == {TP0: 3, TP1: 2}
