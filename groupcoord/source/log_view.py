"""The driver's view of where records live: partition counts and log bounds, of the embedded log or a Kafka cluster.

With a Kafka cluster, :meth:`KafkaLogView.sync_catalog` also copies the subscribed topics' partition counts into the
state root's topic catalog, which is what the group's assignor assigns from (counts only grow).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from kafka.structs import TopicPartition

from groupcoord.source.records import kafka_client_config, watermarks
from groupcoord.state_root import StateRoot
from groupcoord.topics import PartitionOffsets, TopicCatalog, TopicError, TopicLog

log = logging.getLogger("groupcoord.source.log_view")

Bounds = dict[TopicPartition, PartitionOffsets]


class LogView(Protocol):
    """Partition counts and log bounds of the subscribed topics."""

    def bounds(self, partitions: Iterable[TopicPartition]) -> Bounds:
        """Log-start and log-end offsets of ``partitions``."""

    def partition_counts(self, wanted: Callable[[str], bool]) -> dict[str, int]:
        """The topics ``wanted`` accepts, with their partition counts."""

    def sync_catalog(self, wanted: Callable[[str], bool]) -> None:
        """Make the state root's catalog know the topics' partitions (nothing to do for the embedded log)."""

    def close(self) -> None:
        """Release clients."""


class EmbeddedLogView:
    """The state root's embedded topic log."""

    def __init__(self, root: StateRoot) -> None:
        self._root = root
        self._catalog = TopicCatalog(root)
        self._logs: dict[str, TopicLog] = {}

    def bounds(self, partitions: Iterable[TopicPartition]) -> Bounds:
        """From the Delta files' statistics, one refresh per topic."""
        by_topic: dict[str, list[int]] = {}
        for tp in partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        result: Bounds = {}
        for topic, wanted in by_topic.items():
            topic_log = self._logs.setdefault(topic, TopicLog(self._root, topic, catalog=self._catalog))
            offsets = topic_log.offsets()
            result.update({TopicPartition(topic, p): offsets.get(p, PartitionOffsets(0, 0)) for p in wanted})
        return result

    def partition_counts(self, wanted: Callable[[str], bool]) -> dict[str, int]:
        """From the topic catalog."""
        return {t: n for t, n in self._catalog.partition_counts().items() if wanted(t)}

    def sync_catalog(self, wanted: Callable[[str], bool]) -> None:
        """The catalog is the embedded log's own: nothing to copy."""

    def close(self) -> None:
        """Nothing held."""


class KafkaLogView:
    """A Kafka cluster, through one confluent-kafka consumer (metadata and watermarks only)."""

    def __init__(self, root: StateRoot, servers: str, settings: Mapping[str, str], *, timeout_s: float) -> None:
        from confluent_kafka import Consumer

        self._catalog = TopicCatalog(root)
        self._consumer = Consumer(kafka_client_config(servers, settings))
        self._timeout_s = timeout_s

    def bounds(self, partitions: Iterable[TopicPartition]) -> Bounds:
        """ListOffsets (earliest, latest) per partition."""
        from confluent_kafka import TopicPartition as KafkaPartition

        result: Bounds = {}
        for tp in partitions:
            # a start equal to a non-zero end (a partition emptied by retention) is asked again: see watermarks()
            low, high = watermarks(self._consumer, KafkaPartition(tp.topic, tp.partition), self._timeout_s,
                                   lambda start, end: 0 < start == end)
            result[tp] = PartitionOffsets(int(low), int(high))
        return result

    def partition_counts(self, wanted: Callable[[str], bool]) -> dict[str, int]:
        """From the cluster's metadata (internal topics left out)."""
        metadata = self._consumer.list_topics(timeout=self._timeout_s)
        return {name: len(topic.partitions) for name, topic in metadata.topics.items()
                if topic.error is None and not name.startswith("__") and wanted(name)}

    def sync_catalog(self, wanted: Callable[[str], bool]) -> None:
        """Create or grow the catalog's topics to the cluster's partition counts."""
        copy_partition_counts(self._catalog, self.partition_counts(wanted))

    def close(self) -> None:
        """Close the consumer."""
        self._consumer.close()


def copy_partition_counts(catalog: TopicCatalog, counts: Mapping[str, int]) -> dict[str, int]:
    """Create or grow the catalog's topics to ``counts``; return the topics created or grown. Counts only grow: a
    topic that shrank on the cluster (impossible in Kafka) or vanished is left as it is in the catalog."""
    known = catalog.partition_counts()
    changed: dict[str, int] = {}
    for topic, count in sorted(counts.items()):
        current = known.get(topic)
        try:
            if current is None:
                catalog.create(topic, count, if_not_exists=True)
            elif count > current:
                catalog.alter(topic, count)
            else:
                continue
        except TopicError as exc:
            log.warning("cannot copy topic %s (%d partitions) into the catalog: %s", topic, count, exc)
            continue
        changed[topic] = count
        log.info("catalog: topic %s now has %d partition(s) (from the Kafka cluster)", topic, count)
    return changed


def open_log_view(root: StateRoot, servers: str | None, settings: Mapping[str, str], *, timeout_s: float) -> LogView:
    """The Kafka cluster's view with ``servers``, else the embedded log's."""
    if servers is None:
        return EmbeddedLogView(root)
    return KafkaLogView(root, servers, settings, timeout_s=timeout_s)
