"""Findings of ``bench/fuzz.py`` (full mode) outside the wire layer, pinned as tests.

An OffsetCommit naming the same partition twice, once with a negative offset: the core computes one error per
``(topic, partition)`` key, so the valid duplicate's NONE hides the other's OFFSET_OUT_OF_RANGE; the negative offset
reaches a record, whose replay raises ``RecordInvariantError`` in the middle of the result. The records replayed
before it stay in memory although they were never persisted and the client got UNKNOWN_SERVER_ERROR, so the core's
state no longer matches its log. Found as input 717930 of ``Mutator(20240607)``; fixed in
``groupcoord/coordinator/offsets.py`` (an error per request entry, not per key).
"""

from __future__ import annotations

from groupcoord.coordinator import CoordinatorConfig, GroupCoordinator
from groupcoord.protocol.errors import Errors
from groupcoord.protocol.requests import OffsetCommitPartition, OffsetCommitRequest, OffsetCommitTopic
from groupcoord.protocol.responses import OffsetCommitResponse
from tests.narrowing import expect


def test_a_partition_named_twice_with_a_negative_offset_is_refused_without_touching_state() -> None:
    core = GroupCoordinator(CoordinatorConfig())
    request = OffsetCommitRequest(group_id="g", topics=(OffsetCommitTopic("t", (
        OffsetCommitPartition(0, 5), OffsetCommitPartition(1, -5), OffsetCommitPartition(1, 7))),))
    result = core.handle(request, 1000, "token")
    [(_, response)] = result.responses
    errors = [p.error for t in expect(response, OffsetCommitResponse).topics for p in t.partitions]
    assert errors[1] is Errors.OFFSET_OUT_OF_RANGE
    # whatever was accepted is exactly what the result asks to persist: memory and log agree
    assert sorted(map(repr, core.snapshot_records())) == sorted(map(repr, result.records))
