"""The materializer's rows of a commit's columnar block of offsets: the same as those of the records it stands for."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from groupcoord.coordinator.records import (
    RecordChunk,
    Records,
    chunk_size,
    encode_records,
    new_group_metadata_record,
    new_offset_commits,
    new_offset_tombstone,
)
from groupcoord.group.metadata import GroupMetadataValue, MemberMetadataValue
from groupcoord.protocol import OffsetCommitPartition
from groupcoord.state.materializer import CommittedBatch, Materializer
from groupcoord.state.rows import RowBuilder
from groupcoord.state.schema import OFFSETS
from groupcoord.state.views import read_rows
from groupcoord.state_root import StateRoot

_MEMBER = MemberMetadataValue(member_id="m", group_instance_id=None, client_id="c", client_host="h",
                              rebalance_timeout_ms=1000, session_timeout_ms=1000, protocols=(), assignment=b"")


def _chunks() -> list[RecordChunk]:
    """A generation, then commits made in it (one partition twice), a deletion, and a later commit."""
    generation = new_group_metadata_record("g", GroupMetadataValue(
        protocol_type="consumer", generation_id=7, protocol_name="range", leader_id="m", state_timestamp_ms=1,
        members=(_MEMBER,)))
    return [generation,
            new_offset_commits("g", [("t", [OffsetCommitPartition(0, 10, 2, "x"), OffsetCommitPartition(1, 11)]),
                                     ("u", [OffsetCommitPartition(0, 12)])], 1000, None),
            new_offset_tombstone("g", "t", 1),
            new_offset_commits("g", [("t", [OffsetCommitPartition(0, 13), OffsetCommitPartition(2, 14)])], 2000,
                               5000),
            new_offset_commits("solo", [("t", [OffsetCommitPartition(3, 1)])], 3000, None)]


def _rows(chunks: list[RecordChunk]) -> dict[str, list[dict[str, object]]]:
    builder = RowBuilder()
    seq = 0
    for chunk in chunks:
        builder.add(chunk, log_version=4, epoch=2, seq=seq, now_ms=9000)
        seq += chunk_size(chunk)
    return {name: table.to_pylist() for name, table in builder.tables().items()}


def test_a_block_makes_the_rows_of_its_records() -> None:
    chunks = _chunks()
    rows = _rows(chunks)
    assert rows == _rows(list(Records(chunks)))
    # one row per key, in the order of each key's first record, with its last record's values
    offsets = [(r["group_id"], r["topic"], r["partition"], r["offset"], r["deleted"], r["seq"])
               for r in rows["offsets"]]
    assert offsets == [
        ("g", "t", 0, 13, False, 5), ("g", "t", 1, None, True, 4), ("g", "u", 0, 12, False, 3),
        ("g", "t", 2, 14, False, 6), ("solo", "t", 3, 1, False, 7)]
    assert [r["generation"] for r in rows["offsets"]] == [7, None, 7, 7, None]


def test_a_batch_of_blocks_materializes_as_its_encoded_records(tmp_path: Path) -> None:
    when = dt.datetime(2026, 11, 29, tzinfo=dt.UTC)
    written = {}
    for name, records in (("blocks", tuple(_chunks())), ("encoded", tuple(encode_records(_chunks())))):
        root = StateRoot.open(tmp_path / name, create=True)
        Materializer(root).apply_batches([CommittedBatch(records=records, log_version=3, epoch=1, committed_at=when)])
        written[name] = read_rows(root, OFFSETS).sort_by([("topic", "ascending"), ("partition", "ascending")])
    assert written["blocks"].to_pylist() == written["encoded"].to_pylist()
    assert written["blocks"].num_rows == 5
