"""Findings of ``bench/fuzz.py`` (full mode) outside the wire layer, pinned as tests.

An OffsetCommit naming the same partition twice, once with an invalid value: the core computed one error per
``(topic, partition)`` key, so the valid duplicate's NONE hid the other's error and the invalid value reached a
record, whose replay raised ``RecordInvariantError`` in the middle of the result. The records replayed before it
stayed in memory although they were never persisted and the client got UNKNOWN_SERVER_ERROR, so the core's state no
longer matched its log. Found as input 717930 of ``Mutator(20240607)`` with a negative offset (which the core now
accepts, as Kafka does: the pinned case uses a leader epoch below -1 instead); fixed in
``groupcoord/coordinator/offsets.py`` (an error per request entry, not per key).
"""

from __future__ import annotations

from groupcoord.coordinator import CoordinatorConfig, GroupCoordinator
from groupcoord.protocol.errors import Errors
from groupcoord.protocol.requests import OffsetCommitPartition, OffsetCommitRequest, OffsetCommitTopic
from groupcoord.protocol.responses import OffsetCommitResponse
from tests.narrowing import expect


def test_a_partition_named_twice_with_an_invalid_entry_is_refused_without_touching_state() -> None:
    core = GroupCoordinator(CoordinatorConfig())
    request = OffsetCommitRequest(group_id="g", topics=(OffsetCommitTopic("t", (
        OffsetCommitPartition(0, 5), OffsetCommitPartition(1, 6, leader_epoch=-5), OffsetCommitPartition(1, 7))),))
    result = core.handle(request, 1000, "token")
    [(_, response)] = result.responses
    errors = [p.error for t in expect(response, OffsetCommitResponse).topics for p in t.partitions]
    assert errors == [Errors.NONE, Errors.INVALID_REQUEST, Errors.NONE]
    # whatever was accepted is exactly what the result asks to persist: memory and log agree
    assert sorted(map(repr, core.snapshot_records())) == sorted(map(repr, result.records))
