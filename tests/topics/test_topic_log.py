"""The embedded topic log: dense offsets, murmur2 placement, offset-range reads that skip unrelated files."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from groupcoord.state_root import StateRoot
from groupcoord.topics import (
    OffsetOutOfRangeError,
    PartitionOffsets,
    ProducerRecord,
    TopicCatalog,
    TopicLog,
    TopicRecord,
    UnknownTopicOrPartitionError,
    partition_for_key,
)
from groupcoord.topics.log_table import TOPIC_LOG_SCHEMA


def _records(n: int, *, prefix: str = "k", partition: int | None = None) -> list[ProducerRecord]:
    return [ProducerRecord(f"v{i}".encode(), key=f"{prefix}{i}".encode(), partition=partition) for i in range(n)]


@pytest.fixture
def log(catalog: TopicCatalog) -> TopicLog:
    catalog.create("events", 3)
    return TopicLog(catalog.root, "events", catalog=catalog)


def test_a_new_topic_has_empty_partitions(log: TopicLog) -> None:
    assert log.offsets() == {p: PartitionOffsets(0, 0) for p in range(3)}
    assert log.read(0, 0).num_rows == 0


def test_offsets_are_dense_per_partition_across_produce_calls(log: TopicLog) -> None:
    first = log.produce(_records(50))
    second = log.produce(_records(50, prefix="x"))
    per_partition: dict[int, list[int]] = {}
    for partition, offset in first.assigned + second.assigned:
        per_partition.setdefault(partition, []).append(offset)
    for partition, offsets in per_partition.items():
        assert offsets == list(range(len(offsets)))
        assert log.log_end_offset(partition) == len(offsets)
        assert log.log_start_offset(partition) == 0
    assert sum(log.end_offsets().values()) == 100
    assert second.version == first.version + 1


def test_keys_land_where_kafkas_partitioner_puts_them(log: TopicLog) -> None:
    result = log.produce(_records(30))
    for i, (partition, _) in enumerate(result.assigned):
        assert partition == partition_for_key(f"k{i}".encode(), 3)


def test_read_returns_the_produced_records_in_offset_order(log: TopicLog) -> None:
    stamp = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    log.produce([ProducerRecord(b"a", key=None, partition=1, timestamp=stamp),
                 ProducerRecord(None, key=b"k", partition=1, timestamp=stamp),
                 ProducerRecord(b"c", key=b"", partition=1, timestamp=stamp)])
    assert log.read_records(1, 0) == [
        TopicRecord(1, 0, stamp, None, b"a"),
        TopicRecord(1, 1, stamp, b"k", None),
        TopicRecord(1, 2, stamp, b"", b"c"),
    ]
    assert log.read(1, 1, max_records=1).column("value").to_pylist() == [None]
    assert log.read(1, 3).num_rows == 0


def test_read_pages_through_a_partition_with_max_records(log: TopicLog) -> None:
    for _ in range(4):
        log.produce(_records(25, partition=2))
    seen, position = [], 0
    while position < log.log_end_offset(2):
        page = log.read(2, position, max_records=30)
        seen.extend(page.column("offset").to_pylist())
        position += page.num_rows
    assert seen == list(range(100))


def test_read_result_has_the_topic_log_schema(log: TopicLog) -> None:
    log.produce(_records(5))
    assert log.read(0, 0).schema.equals(TOPIC_LOG_SCHEMA)


def test_keyless_records_spread_round_robin(log: TopicLog) -> None:
    result = log.produce([ProducerRecord(f"v{i}".encode()) for i in range(9)])
    assert sorted(p for p, _ in result.assigned) == [0, 0, 0, 1, 1, 1, 2, 2, 2]


@pytest.mark.parametrize("offset", [-1, 4])
def test_reading_outside_the_log_is_offset_out_of_range(log: TopicLog, offset: int) -> None:
    log.produce(_records(3, partition=0))
    with pytest.raises(OffsetOutOfRangeError, match=r"events-0 \(log start 0, log end 3\)") as caught:
        log.read(0, offset)
    assert caught.value.error_code == 1


@pytest.mark.parametrize("partition", [-1, 3])
def test_unknown_partitions_are_refused_for_reads_and_writes(log: TopicLog, partition: int) -> None:
    with pytest.raises(UnknownTopicOrPartitionError):
        log.read(partition, 0)
    with pytest.raises(UnknownTopicOrPartitionError):
        log.produce(_records(1, partition=partition))
    assert log.end_offsets() == {0: 0, 1: 0, 2: 0}


def test_an_unknown_topic_is_refused(root: StateRoot, catalog: TopicCatalog) -> None:
    with pytest.raises(UnknownTopicOrPartitionError, match="Topic 'ghost' does not exist"):
        TopicLog(root, "ghost", catalog=catalog).produce(_records(1))
    assert not root.topic_path("ghost").local_path.exists()


def test_an_empty_produce_commits_nothing(log: TopicLog, root: StateRoot) -> None:
    before = DeltaTable(str(root.topic_path("events"))).version()
    assert log.produce([]).assigned == ()
    assert DeltaTable(str(root.topic_path("events"))).version() == before


def test_a_grown_topic_accepts_its_new_partitions(log: TopicLog, catalog: TopicCatalog) -> None:
    catalog.alter("events", 5)
    log.produce(_records(2, partition=4))
    assert log.offsets()[4] == PartitionOffsets(0, 2)


def test_offsets_and_reads_never_open_other_partitions_or_older_files(log: TopicLog, root: StateRoot) -> None:
    log.produce(_records(10, partition=0))
    log.produce(_records(10, partition=0))
    log.produce(_records(10, partition=1))
    table_path = root.topic_path("events").local_path
    # Corrupt every data file except the one holding partition 0's offsets 10..19: the offsets come from Delta
    # statistics and the read prunes by partition and offset range, so neither touches a corrupted file.
    keep = next(p for p in (table_path / "partition=0").glob("*.parquet") if _max_offset(p) == 19)
    for data_file in table_path.rglob("*.parquet"):
        if data_file != keep:
            data_file.write_bytes(b"corrupt")
    fresh = TopicLog(root, "events")
    assert fresh.offsets() == {0: PartitionOffsets(0, 20), 1: PartitionOffsets(0, 10), 2: PartitionOffsets(0, 0)}
    assert fresh.read(0, 12, max_records=5).column("offset").to_pylist() == [12, 13, 14, 15, 16]
    with pytest.raises(pa.ArrowInvalid, match="Could not open Parquet input source"):
        fresh.read(1, 0)  # proves the corruption is real


def _max_offset(path: Path) -> int:
    import pyarrow.parquet as pq

    return int(pq.read_table(path, columns=["offset"]).column("offset").to_pylist()[-1])


def test_topic_log_table_is_delta_1_2_partitioned_by_partition(log: TopicLog, root: StateRoot) -> None:
    log.produce(_records(20))
    table = DeltaTable(str(root.topic_path("events")))
    protocol = table.protocol()
    assert (protocol.min_reader_version, protocol.min_writer_version) == (1, 2)
    assert table.metadata().partition_columns == ["partition"]
    fields = {f.name: str(f.type) for f in pa.schema(table.schema().to_arrow())}
    assert fields == {"partition": "int32", "offset": "int64", "timestamp": "timestamp[us, tz=UTC]",
                      "key": "binary", "value": "binary", "timestamp_type": "int32", "compression": "string",
                      "headers": "list<element: struct<key: string not null, value: binary>>"}


def test_one_hundred_thousand_records_produce_in_one_commit_quickly(log: TopicLog, root: StateRoot) -> None:
    started = datetime.now(UTC)
    result = log.produce(_records(100_000))
    elapsed = (datetime.now(UTC) - started).total_seconds()
    assert len(result.assigned) == 100_000 and result.attempts == 1
    assert sum(log.end_offsets().values()) == 100_000
    # One file per partition, not one per record.
    assert len(list(root.topic_path("events").local_path.rglob("*.parquet"))) == 3
    assert elapsed < 20, f"100,000 records took {elapsed:.1f} s"


_PRODUCER = """
import sys, time
from pathlib import Path
from groupcoord.state_root import StateRoot
from groupcoord.topics import ProducerRecord, TopicLog, TopicsConfig
location, name, go = sys.argv[1], sys.argv[2], Path(sys.argv[3])
log = TopicLog(StateRoot.open(location), "race", config=TopicsConfig(commit_backoff_ms=1))
log.partitions()
while not go.exists():
    time.sleep(0.005)
attempts = 0
for batch in range(30):
    records = [ProducerRecord(f"{name}-{batch}-{i}".encode(), key=f"{name}-{batch}-{i}".encode()) for i in range(5)]
    attempts += log.produce(records).attempts
print(attempts)
"""


@pytest.mark.integration
def test_four_concurrent_producer_processes_leave_dense_offsets_without_duplicates(tmp_path: Path) -> None:
    location, go = tmp_path / "root", tmp_path / "go"
    TopicCatalog(StateRoot.open(location, create=True)).create("race", 3)
    procs = [subprocess.Popen([sys.executable, "-c", _PRODUCER, str(location), f"p{n}", str(go)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for n in range(4)]
    go.touch()  # a start barrier, so the four really overlap
    outputs = [proc.communicate(timeout=240) for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * 4, [err for _, err in outputs]
    table = DeltaTable(str(location / "topics" / "race")).to_pyarrow_table()
    assert table.num_rows == 4 * 30 * 5
    log = TopicLog(StateRoot.open(location), "race")
    for partition in range(3):
        offsets = sorted(o for p, o in zip(table.column("partition").to_pylist(), table.column("offset").to_pylist(),
                                           strict=True) if p == partition)
        assert offsets == list(range(len(offsets))), f"partition {partition} is not dense or has duplicates"
        assert log.log_end_offset(partition) == len(offsets)
    # Every record is there exactly once, in the partition its key maps to.
    keys = table.column("key").to_pylist()
    assert sorted(keys) == sorted(f"p{n}-{b}-{i}".encode() for n in range(4) for b in range(30) for i in range(5))
    assert all(partition_for_key(k, 3) == p for k, p in zip(keys, table.column("partition").to_pylist(), strict=True))
    # 120 winning commits; the producers really raced, so some commits were lost, re-read and retried.
    assert len(DeltaTable(str(location / "topics" / "race")).history()) == 1 + 120
    assert sum(int(out) for out, _ in outputs) > 120


def test_the_producers_own_bounds_after_a_commit_match_a_fresh_readers(log: TopicLog, root: StateRoot) -> None:
    for n in range(3):
        log.produce(_records(5 + n, prefix=f"b{n}-"))
        log.produce(_records(2, partition=n))
    assert log.offsets() == TopicLog(root, "events").offsets()
