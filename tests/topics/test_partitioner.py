"""Choosing a record's partition: explicit, murmur2 key, or round-robin for null keys."""

from __future__ import annotations

import pytest

from groupcoord.topics.errors import UnknownTopicOrPartitionError
from groupcoord.topics.murmur2 import partition_for_key
from groupcoord.topics.partitioner import KeyPartitioner


def test_keyed_records_use_murmur2_and_ignore_the_round_robin_position() -> None:
    partitioner = KeyPartitioner(start=0)
    picks = [partitioner.partition("t", b"user-42", 6) for _ in range(5)]
    assert picks == [partition_for_key(b"user-42", 6)] * 5


def test_null_keys_go_round_robin_from_the_start_position() -> None:
    partitioner = KeyPartitioner(start=2)
    assert [partitioner.partition("t", None, 3) for _ in range(6)] == [2, 0, 1, 2, 0, 1]


def test_explicit_partition_wins_over_the_key() -> None:
    assert KeyPartitioner().partition("t", b"k", 4, explicit=3) == 3


@pytest.mark.parametrize("partition", [-1, 4])
def test_explicit_partition_outside_the_topic_is_unknown(partition: int) -> None:
    with pytest.raises(UnknownTopicOrPartitionError, match=f"Partition {partition} of topic 't' does not exist") as e:
        KeyPartitioner().partition("t", None, 4, explicit=partition)
    assert e.value.error_code == 3
