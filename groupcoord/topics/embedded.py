"""The embedded topic logs as Fetch and ListOffsets read them: one cached :class:`TopicLog` per topic of a root.

Every read blocks on Delta reads: the server's adapters call them off the event loop (``asyncio.to_thread``).
Produce appends through the topics' group commit instead (:mod:`groupcoord.topics.appender`).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Mapping

import pyarrow as pa

from groupcoord.state_root import StateRoot
from groupcoord.topics.catalog import TopicCatalog
from groupcoord.topics.topic_log import PartitionOffsets, TopicLog


class EmbeddedTopics:
    """Reads of the topic logs of a state root (the server's ``TopicReader``, and a ``TopicSource``)."""

    def __init__(self, root: StateRoot, *, catalog: TopicCatalog | None = None) -> None:
        self._root = root
        self._catalog = catalog or TopicCatalog(root)
        self._logs: dict[str, TopicLog] = {}
        self._lock = threading.Lock()

    def partition_counts(self) -> Mapping[str, int]:
        """Every topic of the catalog and its partition count."""
        return self._catalog.partition_counts()

    def topic_ids(self) -> Mapping[str, uuid.UUID]:
        """Every topic of the catalog and its id."""
        return self._catalog.topic_ids()

    def offsets(self, topic: str) -> Mapping[int, PartitionOffsets]:
        """Start and end offsets of every partition of ``topic``."""
        return self._log(topic).offsets()

    def read(self, topic: str, partition: int, from_offset: int, max_records: int) -> pa.Table:
        """Rows of ``topic``-``partition`` from ``from_offset`` on (the topic log's columns)."""
        return self._log(topic).read(partition, from_offset, max_records)

    def _log(self, topic: str) -> TopicLog:
        with self._lock:
            log = self._logs.get(topic)
            if log is None:
                log = self._logs[topic] = TopicLog(self._root, topic, catalog=self._catalog)
            return log
