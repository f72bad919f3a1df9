"""Choosing the partition of each produced record.

* An explicit partition wins (it is validated against the partition count).
* A non-null key goes where Kafka's default partitioner puts it: murmur2, see :mod:`groupcoord.topics.murmur2`.
* A null key goes round-robin, starting at a random partition per partitioner. Kafka's newer clients use a "sticky"
  partition per batch instead; for an embedded log where one produce call is one commit, round-robin spreads a
  keyless batch evenly, which is what the demo and Spark members want.
"""

from __future__ import annotations

import random

from groupcoord.topics.errors import UnknownTopicOrPartitionError
from groupcoord.topics.murmur2 import partition_for_key


class KeyPartitioner:
    """Stateful partitioner for one producer: murmur2 for keys, round-robin for null keys."""

    def __init__(self, *, start: int | None = None) -> None:
        self._next = random.randrange(1 << 30) if start is None else start

    def partition(self, topic: str, key: bytes | None, partitions: int, explicit: int | None = None) -> int:
        """The partition for one record of ``topic`` with ``partitions`` partitions."""
        if explicit is not None:
            if not 0 <= explicit < partitions:
                raise UnknownTopicOrPartitionError(
                    f"Partition {explicit} of topic '{topic}' does not exist (it has {partitions} partitions)."
                )
            return explicit
        if key is not None:
            return partition_for_key(key, partitions)
        chosen = self._next % partitions
        self._next += 1
        return chosen
