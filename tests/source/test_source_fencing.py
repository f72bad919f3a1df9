"""The source's driver side against a real coordinator, called as Spark calls it (no Spark needed for that):
one reader's batches, a cooperative hand-over between two readers, and the late commit of a previous owner (on the
embedded log and on the session's Kafka broker)."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from kafka.structs import TopicPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from groupcoord.sink.group_commit import commit_batch_offsets, commit_fenced
from groupcoord.source.data_source import GroupcoordStreamReader
from groupcoord.source.offset import SourceOffset
from groupcoord.state_root import StateRoot
from tests.source.source_helpers import Feed, committed, produce, read_batch, reader

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
ALL = ReadAllAvailable()


def _rows(table: pa.Table) -> list[tuple[int, int, bytes]]:
    return sorted(zip(table.column("partition").to_pylist(), table.column("offset").to_pylist(),
                      table.column("value").to_pylist(), strict=True))


@contextlib.contextmanager
def _first_batch(root: StateRoot) -> Iterator[tuple[GroupcoordStreamReader, dict[str, Any], dict[str, Any]]]:
    """A reader of group ``g`` on ``t`` (2 partitions of 5 records, 6 records a batch) with its first batch planned:
    the reader, the batch's start and end; the reader stops afterwards."""
    produce(root, "t", 2, 5)
    source = reader(root, "t", maxOffsetsPerTrigger="6")
    try:
        start = source.initialOffset()
        yield source, start, source.latestOffset(start, source.getDefaultReadLimit())
    finally:
        source.stop()


@pytest.mark.usefixtures("source_coordinator")
def test_one_reader_reads_its_batches_and_commits_them(source_root: StateRoot) -> None:
    with _first_batch(source_root) as (source, start, first):
        assert _rows(read_batch(source, start, first)) == [(p, n, f"{p}-{n}".encode()) for p in (0, 1)
                                                           for n in range(3)]
        second = source.latestOffset(first, ReadMaxRows(6))
        table = read_batch(source, first, second)
        assert _rows(table) == [(p, n, f"{p}-{n}".encode()) for p in (0, 1) for n in (3, 4)]
        assert table.schema.names == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
        assert set(table.column("topic").to_pylist()) == {"t"}
        assert set(table.column("timestampType").to_pylist()) == {1}  # no producer timestamp: LogAppendTime
        assert source.latestOffset(second, ALL) == second  # nothing new: no batch
        assert committed(source_root, "g", [T0, T1]) == {T0: 5, T1: 5}  # committed when the next batch was planned


@pytest.mark.usefixtures("source_coordinator")
def test_the_sources_commit_never_moves_back_an_offset_the_sink_committed_further(source_root: StateRoot) -> None:
    # A driver restarted: another query's replay wrote 3-5 and the groupcoord-delta sink committed its table's
    # versions (5) for this query's batch 0-3; Spark's commit(end) of that batch (3) must not undo them.
    with _first_batch(source_root) as (source, _, first):
        assert commit_fenced("g", {("t", 0): 5, ("t", 1): 5}, state_root=source_root,
                             read=SourceOffset.from_dict(first)).committed == {("t", 0): 5, ("t", 1): 5}
        source.commit(first)
        assert committed(source_root, "g", [T0, T1]) == {T0: 5, T1: 5}


def _plan_until(source: GroupcoordStreamReader, start: dict[str, Any], owning: int, deadline: float,
                *others: GroupcoordStreamReader) -> None:
    """Plan batches as an idle query does (every trigger; no records arrive) until the reader, and each of
    ``others``, owns ``owning`` partitions. A reader keeps planning while the others still wait for their share: its
    triggers are its polls, and a cooperative hand-over takes a second rebalance that it joins."""
    while time.monotonic() < deadline:
        assert source.latestOffset(start, ALL) == start  # nothing to read: no batch
        if all(len(reader.assignment()) == owning for reader in (source, *others)):
            return
        time.sleep(0.1)
    raise AssertionError(f"the readers never came to own {owning} partition(s) each")


@pytest.fixture(params=["embedded", pytest.param("kafka", marks=pytest.mark.kafka)])
def feed(request: pytest.FixtureRequest, source_root: StateRoot) -> Feed:
    """Records on the embedded log, or on the session's Kafka broker."""
    return Feed(source_root, request.getfixturevalue("kafka_broker") if request.param == "kafka" else None)


@pytest.mark.usefixtures("source_coordinator")
def test_a_late_commit_of_a_previous_owner_never_moves_offsets_back(source_root: StateRoot, feed: Feed,
                                                                    tmp_path: Path) -> None:
    topic = feed.topic("t")
    t0, t1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    feed.produce(topic, 2, 10)
    first, second = reader(source_root, topic, **feed.options()), reader(source_root, topic, **feed.options())
    try:
        a_start = first.initialOffset()
        a_end = first.latestOffset(a_start, ALL)  # A owns both partitions and reads 0..9 of each
        assert {tp: p.next for tp, p in SourceOffset.from_dict(a_end).positions.items()} == {t0: 10, t1: 10}

        # B joins; A's next planning (its batch has finished) commits 10/10, then gives one partition up.
        deadline = time.monotonic() + 60
        joining = threading.Thread(target=_plan_until, args=(second, second.initialOffset(), 1, deadline))
        joining.start()
        _plan_until(first, a_end, 1, deadline, second)
        joining.join(60)
        (moved,), (kept,) = second.assignment(), first.assignment()
        assert committed(source_root, "g", [t0, t1]) == {t0: 10, t1: 10}

        # B reads the moved partition from the committed offset on, and commits further.
        feed.produce(topic, 2, 5, first=10)
        b_start = second.initialOffset()
        b_end = second.latestOffset(b_start, ALL)
        assert _rows(read_batch(second, b_start, b_end)) == [(moved.partition, n, f"{moved.partition}-{n}".encode())
                                                             for n in range(10, 15)]
        second.latestOffset(b_end, ALL)  # the next planning commits B's batch
        assert committed(source_root, "g", [moved])[moved] == 15

        # A's late commit(end) of its first batch (Spark calls it after planning the next one) names the moved
        # partition at 10: fenced, it commits nothing for it.
        first.commit(a_end)
        assert committed(source_root, "g", [moved])[moved] == 15
        # The sink helper fences the same way, from the batch's checkpointed offset.
        checkpoint = tmp_path / "checkpoint"
        (checkpoint / "offsets").mkdir(parents=True)
        (checkpoint / "offsets" / "0").write_text("v1\n{}\n" + json.dumps(a_end) + "\n")
        result = commit_batch_offsets("g", {(moved.topic, moved.partition): 10, (kept.topic, kept.partition): 10},
                                      state_root=source_root.path, checkpoint_location=checkpoint, batch_id=0)
        assert result.committed == {(kept.topic, kept.partition): 10}
        assert "moved" in result.skipped[(moved.topic, moved.partition)]
        assert committed(source_root, "g", [t0, t1]) == {kept: 10, moved: 15}
        # A member that left has no fence: nothing it read is committed any more.
        first.stop()
        left = commit_fenced("g", {(kept.topic, kept.partition): 10}, state_root=source_root.path,
                             read=SourceOffset.from_dict(a_end))
        assert left.committed == {} and "left the group" in left.skipped[(kept.topic, kept.partition)]
    finally:
        first.stop()
        second.stop()


@pytest.mark.usefixtures("source_coordinator")
def test_a_position_outside_the_log_fails_with_fail_on_data_loss(source_root: StateRoot) -> None:
    produce(source_root, "t", 1, 3)
    strict = reader(source_root, "t", startingOffsets='{"t": {"0": 7}}')
    try:
        with pytest.raises(RuntimeError, match="failOnDataLoss"):
            strict.latestOffset(strict.initialOffset(), ALL)
    finally:
        strict.stop()
