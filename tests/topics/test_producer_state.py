"""Idempotent producers' sequence rules (Kafka's, per producer and partition) and unique producer ids."""

from __future__ import annotations

import pytest

from groupcoord.topics.errors import InvalidProducerEpochError, OutOfOrderSequenceError
from groupcoord.topics.producer_state import CACHED_BATCHES, ProducerBatch, ProducerIdAllocator, ProducerStates


def _batch(sequence: int, count: int = 2, *, epoch: int = 0, producer: int = 7) -> ProducerBatch:
    return ProducerBatch(producer, epoch, sequence, count)


def test_a_new_producer_is_accepted_at_any_sequence_then_must_continue_it() -> None:
    states = ProducerStates()
    entry, duplicate = states.accept("t", 0, _batch(10))
    assert not duplicate and (entry.first_sequence, entry.last_sequence) == (10, 11)
    assert states.accept("t", 0, _batch(12))[1] is False
    with pytest.raises(OutOfOrderSequenceError, match="expected 14"):
        states.accept("t", 0, _batch(15))
    assert states.accept("t", 0, _batch(14))[1] is False


def test_a_retried_batch_is_a_duplicate_of_its_original_within_the_last_five() -> None:
    states = ProducerStates()
    first, _ = states.accept("t", 0, _batch(0))
    first.base_offset = 100
    for n in range(1, CACHED_BATCHES):
        states.accept("t", 0, _batch(2 * n))
    again, duplicate = states.accept("t", 0, _batch(0))
    assert duplicate and again is first and again.base_offset == 100
    states.accept("t", 0, _batch(2 * CACHED_BATCHES))  # pushes the first batch out of the cache
    with pytest.raises(OutOfOrderSequenceError):
        states.accept("t", 0, _batch(0))


def test_partitions_and_producers_are_independent() -> None:
    states = ProducerStates()
    states.accept("t", 0, _batch(0))
    assert states.accept("t", 1, _batch(5))[1] is False
    assert states.accept("t", 0, _batch(9, producer=8))[1] is False
    assert states.accept("u", 0, _batch(3))[1] is False


def test_an_older_epoch_is_refused_and_a_newer_one_starts_at_zero() -> None:
    states = ProducerStates()
    states.accept("t", 0, _batch(4, epoch=1))
    with pytest.raises(InvalidProducerEpochError):
        states.accept("t", 0, _batch(6, epoch=0))
    with pytest.raises(OutOfOrderSequenceError, match="not 0"):
        states.accept("t", 0, _batch(6, epoch=2))
    assert states.accept("t", 0, _batch(0, epoch=2))[1] is False


def test_sequences_wrap_after_the_largest_int32() -> None:
    states = ProducerStates()
    entry, _ = states.accept("t", 0, _batch(2**31 - 2, count=3))
    assert entry.last_sequence == 0
    assert states.accept("t", 0, _batch(1))[1] is False


def test_a_forgotten_batch_is_accepted_again() -> None:
    states = ProducerStates()
    states.accept("t", 0, _batch(0))
    batch = _batch(2)
    entry, _ = states.accept("t", 0, batch)
    states.forget("t", 0, batch, entry)
    again, duplicate = states.accept("t", 0, batch)
    assert not duplicate and again is not entry


def test_producer_ids_are_unique_within_and_across_terms() -> None:
    first, second = ProducerIdAllocator(1), ProducerIdAllocator(2)
    ids = [first.next_id() for _ in range(3)] + [second.next_id() for _ in range(3)]
    assert len(set(ids)) == 6 and all(i >= 0 for i in ids)
    assert ids[0] == 1 << 32 and ids[3] == 2 << 32
    with pytest.raises(ValueError):
        ProducerIdAllocator(-1)
