"""What the wire's topic APIs need from the topic logs: reads for ListOffsets and Fetch, appends for Produce.

The server holds no Delta code: the host hands it a reader (:class:`groupcoord.topics.embedded.EmbeddedTopics`)
and a writer (:class:`groupcoord.topics.appender.TopicAppender`, Produce's group commit) through these two
interfaces. Produce does not go through the group runtime, as in Kafka, where Produce goes to the partition's log
and the group coordinator's runtime writes its own partition of ``__consumer_offsets``: both end in the log layer
(:mod:`groupcoord.storage`). Reads block (adapters call them off the event loop, ``asyncio.to_thread``); appends
return a future (``asyncio.wrap_future``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from typing import Protocol

import pyarrow as pa

from groupcoord.topics.appender import AppendResult
from groupcoord.topics.producer_state import ProducerBatch
from groupcoord.topics.record_columns import RecordColumns
from groupcoord.topics.topic_log import PartitionOffsets, ProducerRecord


class TopicReader(Protocol):
    """What ListOffsets and Fetch need from a topic log."""

    def offsets(self, topic: str) -> Mapping[int, PartitionOffsets]:
        """Start and end offsets of every partition; raises ``UnknownTopicOrPartitionError`` for unknown topics."""

    def read(self, topic: str, partition: int, from_offset: int, max_records: int) -> pa.Table:
        """Up to ``max_records`` rows of the topic log (its table's columns) from ``from_offset``, in offset order
        (``OffsetOutOfRangeError`` outside the log)."""


class TopicWriter(Protocol):
    """What Produce needs from the topic logs: a group-committed append (``groupcoord.topics.appender``)."""

    def append(self, topic: str, partition: int, records: Sequence[ProducerRecord] | RecordColumns, *,
               producer: ProducerBatch | None = None) -> Future[AppendResult]:
        """Queue one batch; the future resolves once it is committed (or fails with a ``TopicError``)."""
