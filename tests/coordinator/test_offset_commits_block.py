"""A commit's offsets as one columnar block (OffsetCommits): the same stored rows, hard state and records as one
record per offset, and results that read as those records."""

from __future__ import annotations

import json
import operator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.coordinator import GroupCoordinator
from groupcoord.coordinator.hard_state import HardStateStore, RecordInvariantError
from groupcoord.coordinator.records import (
    OffsetCommitRecord,
    OffsetCommits,
    OffsetValue,
    Records,
    chunks_of,
    encode_record,
    encode_records,
    new_group_tombstone,
    new_offset_commit_record,
    new_offset_commits,
)
from groupcoord.coordinator.result import CoordinatorResult
from groupcoord.protocol import OffsetCommitPartition, OffsetCommitRequest, OffsetCommitTopic
from tests.narrowing import expect, present

_partition = st.builds(OffsetCommitPartition, partition=st.integers(0, 5), offset=st.integers(-(2**63), 2**63 - 1),
                       leader_epoch=st.integers(-1, 2**31 - 1), metadata=st.text(max_size=8))
_topics = st.lists(st.tuples(st.sampled_from(["t", "ü-topic", "a.b"]), st.lists(_partition, max_size=6)), max_size=3)


def _one_by_one(group_id: str, topics: list[tuple[str, list[OffsetCommitPartition]]], now_ms: int,
                expire: int | None) -> list[OffsetCommitRecord]:
    """The records of a commit as the commit path built them before blocks, one per offset."""
    return [new_offset_commit_record(group_id, topic, p.partition, OffsetValue(
        offset=p.offset, leader_epoch=p.leader_epoch, metadata=p.metadata, commit_timestamp_ms=now_ms,
        expire_timestamp_ms=expire)) for topic, partitions in topics for p in partitions]


@settings(max_examples=60, deadline=None)
@given(topics=_topics, now_ms=st.integers(0, 2**45), expire=st.none() | st.integers(0, 2**45))
def test_a_block_stands_for_its_records_stores_their_rows_and_replays_to_their_state(
        topics: list[tuple[str, list[OffsetCommitPartition]]], now_ms: int, expire: int | None) -> None:
    block = new_offset_commits("g", topics, now_ms, expire)
    records = _one_by_one("g", topics, now_ms, expire)
    assert list(block.records()) == records and len(block) == len(records)
    assert encode_records([block]) == [encode_record(r) for r in records]  # byte for byte: the stored rows
    assert [e.value for e in encode_records([block])] == [json.dumps(  # as the generic codec writes a value
        present(r.value)._asdict(), sort_keys=True, separators=(",", ":")).encode() for r in records]
    columnar, one_by_one = HardStateStore(), HardStateStore()
    columnar.replay_offsets(block)  # a partition named twice: the later one wins, as in order
    for record in records:
        one_by_one.replay(record)
    assert columnar.snapshot() == one_by_one.snapshot()


def test_a_block_with_an_invalid_key_is_refused_like_its_record() -> None:
    block = new_offset_commits("g", [("t", [OffsetCommitPartition(0, 1)]), ("", [OffsetCommitPartition(1, 2)])], 0,
                               None)
    with pytest.raises(RecordInvariantError, match="invalid key"):
        HardStateStore().replay_offsets(block)


def test_an_empty_block_leaves_no_trace_in_hard_state() -> None:
    state = HardStateStore()
    state.replay_offsets(new_offset_commits("g", [("t", [])], 0, None))
    assert state.group_ids() == []


def test_a_commit_result_reads_as_one_record_per_offset_and_keeps_its_block() -> None:
    core = GroupCoordinator()
    request = OffsetCommitRequest(group_id="g", generation_id=-1, member_id="", topics=(
        OffsetCommitTopic("t", (OffsetCommitPartition(0, 10, 3, "m"), OffsetCommitPartition(-1, 5))),
        OffsetCommitTopic("u", (OffsetCommitPartition(2, 20),))), retention_time_ms=1000)
    result = core.handle(request, 5000, token=1)
    records = result.records
    assert isinstance(records, Records)
    [block] = records.chunks
    assert isinstance(block, OffsetCommits)
    expected = (new_offset_commit_record("g", "t", 0, OffsetValue(10, 3, "m", 5000, 6000)),
                new_offset_commit_record("g", "u", 2, OffsetValue(20, -1, "", 5000, 6000)))
    assert records == expected and expected == records and len(records) == 2 and records[1] == expected[1]
    assert list(records) == list(expected) and records[:1] == expected[:1]
    assert dict(core.committed_offsets("g")) == {("t", 0): expected[0].value, ("u", 2): expected[1].value}

    tombstone = new_group_tombstone("h")
    merged = result.merged(CoordinatorResult(records=(tombstone,)))
    assert merged.records == (*expected, tombstone)
    assert chunks_of(merged.records) == (block, tombstone)
    assert chunks_of((tombstone,)) == (tombstone,)
    assert operator.add((tombstone,), expect(records, Records)) == (tombstone, *expected)  # Records.__radd__


def test_a_result_without_blocks_keeps_a_plain_tuple() -> None:
    result = CoordinatorResult(records=(new_group_tombstone("g"),))
    assert type(result.merged(CoordinatorResult()).records) is tuple
