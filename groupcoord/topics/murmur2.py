"""Kafka's murmur2 hash and its default key partitioning: ``(murmur2(key) & 0x7fffffff) % partitions``.

This is the 32-bit MurmurHash2 variant Kafka's Java client uses (seed ``0x9747b28c``), computed here with explicit
32-bit wrap-around so that a key lands in the same partition as it would with a Kafka producer.
"""

from __future__ import annotations

_MASK = 0xFFFFFFFF
_SEED = 0x9747B28C
_M = 0x5BD1E995
_R = 24


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 of ``data`` as a signed 32-bit integer (the value Java's ``Utils.murmur2`` returns)."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> _R
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = data[whole:]
    if tail:
        # The remaining 1-3 bytes are folded in little-endian order, then mixed once.
        h ^= int.from_bytes(tail, "little")
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(value: int) -> int:
    """Kafka's ``Utils.toPositive``: clear the sign bit (not ``abs``, which would overflow for ``-2**31``)."""
    return value & 0x7FFFFFFF


def partition_for_key(key: bytes, partitions: int) -> int:
    """The partition Kafka's default partitioner picks for a non-null ``key`` among ``partitions``."""
    if partitions < 1:
        raise ValueError(f"partitions must be at least 1, got {partitions}")
    return to_positive(murmur2(key)) % partitions
