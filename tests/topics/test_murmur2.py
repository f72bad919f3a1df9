"""Kafka's murmur2 and default key partitioning, checked against Kafka's own test vectors and kafka-python."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.partitioner.default import DefaultPartitioner
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from groupcoord.topics.murmur2 import murmur2, partition_for_key, to_positive

# (key, Utils.murmur2(key)) as asserted by Kafka's UtilsTest.testMurmur2.
KAFKA_VECTORS = [
    (b"21", -973932308),
    (b"foobar", -790332482),
    (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    (b"abc", 479470107),
]


@pytest.mark.parametrize(("key", "expected"), KAFKA_VECTORS)
def test_murmur2_matches_kafka_java_test_vectors(key: bytes, expected: int) -> None:
    assert murmur2(key) == expected


@given(st.binary(max_size=64))
def test_murmur2_agrees_with_kafka_python_for_any_bytes(data: bytes) -> None:
    # kafka-python returns the same 32 bits unsigned; ours is Java's signed int.
    assert murmur2(data) & 0xFFFFFFFF == kafka_python_murmur2(data)


class _OneTopicCluster:
    """The three ClusterMetadata queries kafka-python's DefaultPartitioner makes, for one topic."""

    def __init__(self, partitions: int) -> None:
        self._partitions = set(range(partitions))

    def topics(self) -> set[str]:
        return {"t"}

    def partitions_for_topic(self, topic: str) -> set[int]:
        return self._partitions

    def available_partitions_for_topic(self, topic: str) -> set[int]:
        return self._partitions


@given(st.binary(min_size=0, max_size=40), st.integers(min_value=1, max_value=1000))
def test_key_lands_in_the_partition_kafkas_default_partitioner_picks(key: bytes, partitions: int) -> None:
    expected = DefaultPartitioner().partition("t", key, key, None, None, _OneTopicCluster(partitions))
    assert partition_for_key(key, partitions) == expected


def test_to_positive_clears_the_sign_bit_instead_of_taking_abs() -> None:
    assert to_positive(-(2**31)) == 0
    assert to_positive(-1) == 2**31 - 1
    assert to_positive(5) == 5


def test_empty_key_is_hashed_not_treated_as_null() -> None:
    assert murmur2(b"") == 275646681
    assert partition_for_key(b"", 7) == 275646681 % 7


def test_partition_count_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        partition_for_key(b"k", 0)
