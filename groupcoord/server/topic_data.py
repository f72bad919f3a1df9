"""Access to the embedded topic log: reads for ListOffsets and Fetch, group-committed appends for Produce.

Every read blocks on Delta reads: adapters call them off the event loop (``asyncio.to_thread``). Appends return a
future instead (``asyncio.wrap_future``).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from typing import Protocol

from groupcoord.state_root import StateRoot
from groupcoord.topics.appender import AppendResult
from groupcoord.topics.catalog import TopicCatalog
from groupcoord.topics.producer_state import ProducerBatch
from groupcoord.topics.topic_log import PartitionOffsets, ProducerRecord, TopicLog, TopicRecord


class TopicReader(Protocol):
    """What ListOffsets and Fetch need from a topic log."""

    def offsets(self, topic: str) -> Mapping[int, PartitionOffsets]:
        """Start and end offsets of every partition; raises ``UnknownTopicOrPartitionError`` for unknown topics."""

    def read(self, topic: str, partition: int, from_offset: int, max_records: int) -> list[TopicRecord]:
        """Up to ``max_records`` records from ``from_offset`` (``OffsetOutOfRangeError`` outside the log)."""


class EmbeddedTopics:
    """A :class:`TopicReader` over the topic logs of a state root, one cached :class:`TopicLog` per topic."""

    def __init__(self, root: StateRoot, *, catalog: TopicCatalog | None = None) -> None:
        self._root = root
        self._catalog = catalog or TopicCatalog(root)
        self._logs: dict[str, TopicLog] = {}
        self._lock = threading.Lock()

    def partition_counts(self) -> Mapping[str, int]:
        """Every topic of the catalog and its partition count (so this is also a ``TopicSource``)."""
        return self._catalog.partition_counts()

    def offsets(self, topic: str) -> Mapping[int, PartitionOffsets]:
        """Start and end offsets of every partition of ``topic``."""
        return self._log(topic).offsets()

    def read(self, topic: str, partition: int, from_offset: int, max_records: int) -> list[TopicRecord]:
        """Records of ``topic``-``partition`` from ``from_offset`` on."""
        return self._log(topic).read_records(partition, from_offset, max_records)

    def _log(self, topic: str) -> TopicLog:
        with self._lock:
            log = self._logs.get(topic)
            if log is None:
                log = self._logs[topic] = TopicLog(self._root, topic, catalog=self._catalog)
            return log


class TopicWriter(Protocol):
    """What Produce needs from the topic logs: a group-committed append (``groupcoord.topics.appender``)."""

    def append(self, topic: str, partition: int, records: Sequence[ProducerRecord], *,
               producer: ProducerBatch | None = None) -> Future[AppendResult]:
        """Queue one batch; the future resolves once it is durable (or fails with a ``TopicError``)."""
