"""Idempotent producers: producer ids, and the sequence numbers each partition has seen of each producer.

Kafka's rules (KIP-98, KIP-360), per ``(producer id, topic, partition)``:

- a batch's epoch below the one the partition has seen is INVALID_PRODUCER_EPOCH;
- a higher epoch starts over: its first sequence must be 0 (OUT_OF_ORDER_SEQUENCE_NUMBER otherwise);
- at the same epoch, a batch equal to one of the last :data:`CACHED_BATCHES` batches is a duplicate (a retry): it is
  acknowledged with the original base offset and not appended again; any other batch must continue the sequence
  (``last + 1``, wrapping after 2**31-1), else OUT_OF_ORDER_SEQUENCE_NUMBER;
- a producer the partition has no state of is accepted at any sequence (Kafka accepts a producer whose state
  expired the same way).

The state lives in the memory of the serving process (one :class:`ProducerStates` per lease term): after a failover,
a producer's next batch starts a fresh state, so a retry that straddles the failover can be appended twice
(``docs/compatibility.md``). Producer ids come from :class:`ProducerIdAllocator`: the lease epoch in the high 32 bits,
so no two terms hand out the same id.
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from dataclasses import dataclass, field

from groupcoord.topics.errors import InvalidProducerEpochError, OutOfOrderSequenceError

CACHED_BATCHES = 5
"""Batches per producer and partition remembered for duplicate detection (Kafka's, and the producers' in-flight cap)."""

NO_PRODUCER_ID = -1
_MAX_SEQUENCE = 2**31 - 1


@dataclass(frozen=True)
class ProducerBatch:
    """The idempotence fields of one record batch: producer id and epoch, first sequence and record count."""

    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def last_sequence(self) -> int:
        """The sequence of the batch's last record (sequences wrap after 2**31-1)."""
        return (self.base_sequence + self.record_count - 1) % (_MAX_SEQUENCE + 1)


@dataclass(eq=False)
class AppendedBatch:
    """A batch the partition accepted; ``base_offset`` is set once its commit is durable (``None`` until then)."""

    first_sequence: int
    last_sequence: int
    base_offset: int | None = None


@dataclass
class _Partition:
    epoch: int
    batches: deque[AppendedBatch] = field(default_factory=lambda: deque(maxlen=CACHED_BATCHES))


Key = tuple[int, str, int]
"""(producer id, topic, partition)."""


class ProducerStates:
    """Sequence state per producer and partition. Callers serialize :meth:`accept` per topic (the group commit does)."""

    def __init__(self) -> None:
        self._states: dict[Key, _Partition] = {}
        self._lock = threading.Lock()

    def accept(self, topic: str, partition: int, batch: ProducerBatch) -> tuple[AppendedBatch, bool]:
        """Check ``batch`` and remember it: ``(entry, duplicate)``. A duplicate returns the original's entry.

        Raises :class:`InvalidProducerEpochError` or :class:`OutOfOrderSequenceError`, remembering nothing.
        """
        key = (batch.producer_id, topic, partition)
        with self._lock:
            state = self._states.get(key)
            if state is not None:
                if batch.producer_epoch < state.epoch:
                    raise InvalidProducerEpochError(
                        f"Producer {batch.producer_id} sent epoch {batch.producer_epoch}, but {topic}-{partition} "
                        f"has already seen epoch {state.epoch}.")
                if batch.producer_epoch > state.epoch:
                    if batch.base_sequence != 0:
                        raise OutOfOrderSequenceError(
                            f"Producer {batch.producer_id} started epoch {batch.producer_epoch} on {topic}-{partition}"
                            f" at sequence {batch.base_sequence}, not 0.")
                    state = None
                else:
                    for seen in state.batches:
                        if (seen.first_sequence, seen.last_sequence) == (batch.base_sequence, batch.last_sequence):
                            return seen, True
                    last = state.batches[-1].last_sequence if state.batches else None
                    if last is not None and batch.base_sequence != (last + 1) % (_MAX_SEQUENCE + 1):
                        raise OutOfOrderSequenceError(
                            f"Producer {batch.producer_id} sent sequence {batch.base_sequence} to {topic}-{partition}"
                            f", expected {(last + 1) % (_MAX_SEQUENCE + 1)}.")
            if state is None:
                state = self._states[key] = _Partition(batch.producer_epoch)
            entry = AppendedBatch(batch.base_sequence, batch.last_sequence)
            state.batches.append(entry)
            return entry, False

    def forget(self, topic: str, partition: int, batch: ProducerBatch, entry: AppendedBatch) -> None:
        """Drop ``entry`` (its commit failed), so the producer's retry of ``batch`` is accepted again."""
        with self._lock:
            state = self._states.get((batch.producer_id, topic, partition))
            if state is not None and entry in state.batches:
                state.batches.remove(entry)


class ProducerIdAllocator:
    """Unique producer ids for InitProducerId: ``term << 32`` plus a counter, ``term`` being the lease epoch."""

    def __init__(self, term: int) -> None:
        if not 0 <= term < 2**31:
            raise ValueError(f"term {term} is outside 0..2**31-1")
        self._base = term << 32
        self._counter = itertools.count()
        self._lock = threading.Lock()

    def next_id(self) -> int:
        """A producer id no earlier call of this term, and no other term, has handed out."""
        with self._lock:
            count = next(self._counter)
        if count >= 2**32:
            raise OverflowError("this term handed out 2**32 producer ids")
        return self._base + count
