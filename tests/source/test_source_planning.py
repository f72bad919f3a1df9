"""The source's pure parts: the offset codec, batch ranges from two offsets alone, admission control, range splits."""

from __future__ import annotations

import json

from kafka.structs import TopicPartition

from groupcoord.source.offset import Position, SourceOffset, batch_ranges, lost_jumps
from groupcoord.source.planning import admit, split_ranges

P0, P1, P2 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 2)


def offset(member: str, positions: dict[TopicPartition, Position], generation: int = 5) -> SourceOffset:
    return SourceOffset("g", member, generation, positions)


def test_offset_round_trips_through_json_with_a_stable_text() -> None:
    end = offset("m-1", {P1: Position(40, 7, start=12), P0: Position(1200, 5), P2: Position(90, 5, 80, lost=True)})
    text = json.dumps(end.to_dict())
    assert SourceOffset.from_dict(json.loads(text)) == end
    assert json.dumps(SourceOffset.from_dict(json.loads(text)).to_dict()) == text
    assert list(end.to_dict()["partitions"]) == ["t:0", "t:1", "t:2"]
    assert [set(p) for p in end.to_dict()["partitions"].values()] == [
        {"next", "acquired"}, {"next", "acquired", "from"}, {"next", "acquired", "from", "lost"}]
    assert lost_jumps(end) == {P2: 80}  # the one jump past removed records the sink accepts


def test_continuing_partitions_read_from_the_previous_end() -> None:
    start = offset("m-1", {P0: Position(10, 3), P1: Position(5, 3)})
    end = offset("m-1", {P0: Position(25, 3), P1: Position(5, 3)})
    assert batch_ranges(start, end) == {P0: (10, 25)}


def test_an_acquired_partition_reads_from_its_start_and_the_stale_position_is_ignored() -> None:
    stale = offset("m-1", {P0: Position(10, 3), P1: Position(100, 3)})
    # P1 moved away and came back in generation 9, starting at 250 (where its other owner committed).
    end = offset("m-1", {P0: Position(20, 3), P1: Position(260, 9, start=250)}, generation=9)
    assert batch_ranges(stale, end) == {P0: (10, 20), P1: (250, 260)}


def test_a_new_member_after_a_restart_continues_nothing_from_the_checkpoint() -> None:
    checkpoint = offset("m-old", {P0: Position(10, 3)})
    end = offset("m-new", {P0: Position(30, 4, start=12)}, generation=4)
    assert batch_ranges(checkpoint, end) == {P0: (12, 30)}
    # Without a start the partition reads nothing: another member's position is never continued.
    assert batch_ranges(checkpoint, offset("m-new", {P0: Position(30, 3)})) == {}


def test_an_unchanged_offset_is_no_batch_even_with_starts_in_it() -> None:
    same = offset("m-1", {P0: Position(10, 3, start=4)})
    assert batch_ranges(same, SourceOffset.from_dict(same.to_dict())) == {}


def test_the_first_batch_starts_from_the_empty_initial_offset() -> None:
    end = offset("m-1", {P0: Position(8, 1, start=0), P1: Position(3, 1, start=3)}, generation=1)
    assert batch_ranges(SourceOffset("g"), end) == {P0: (0, 8)}


def test_admission_shares_the_limit_in_proportion_to_the_backlogs() -> None:
    ranges = {P0: (0, 900), P1: (100, 200), P2: (5, 5)}
    assert admit(ranges, 100) == {P0: 90, P1: 110, P2: 5}
    assert admit(ranges, None) == {P0: 900, P1: 200, P2: 5}
    assert admit(ranges, 5000) == {P0: 900, P1: 200, P2: 5}
    # A share below one record rounds up, so that every partition with a backlog moves.
    assert admit({P0: (0, 1000), P1: (0, 1)}, 10) == {P0: 9, P1: 1}


def test_splits_follow_min_partitions_and_max_records() -> None:
    ranges = {P0: (0, 100), P1: (0, 10), P2: (7, 7)}
    assert split_ranges(ranges) == [(P0, 0, 100), (P1, 0, 10)]
    assert split_ranges(ranges, max_records=40) == [(P0, 0, 33), (P0, 33, 66), (P0, 66, 100), (P1, 0, 10)]
    pieces = split_ranges(ranges, min_partitions=5)
    assert len(pieces) >= 5
    assert sum(high - low for _, low, high in pieces) == 110
    assert {tp for tp, _, _ in pieces} == {P0, P1}
