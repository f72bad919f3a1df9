"""Where the ingestion job reads records: the embedded topic log, or a Kafka cluster (``kafka://HOST:PORT,...``).

A :class:`SourceSpec` is a small picklable description built on the driver and shipped to every member task, where
:meth:`SourceSpec.open_reader` opens a :class:`PartitionReader`. Readers return Arrow tables in the topic log's
schema (``partition, offset, timestamp, key, value``), so the sink and the checks see one shape whatever the source.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import pyarrow as pa
from kafka.structs import TopicPartition

from groupcoord.config import ConfigError
from groupcoord.member.config import parse_bootstrap
from groupcoord.state_root import StateRoot
from groupcoord.topics import PartitionOffsets, TopicCatalog, TopicLog
from groupcoord.topics.log_table import TOPIC_LOG_SCHEMA

KAFKA_SCHEME = "kafka://"
EMBEDDED = "embedded"

__all__ = ["EMBEDDED", "KAFKA_SCHEME", "TOPIC_LOG_SCHEMA", "EmbeddedReader", "PartitionReader", "SourceSpec"]


class PartitionReader(Protocol):
    """Reads records of explicitly given partitions at explicitly given offsets (no group on the source side)."""

    def bounds(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, PartitionOffsets]:
        """Log-start and log-end offset of each partition."""

    def read(self, positions: Mapping[TopicPartition, int], max_records: int) -> dict[TopicPartition, pa.Table]:
        """Up to ``max_records`` records of each partition from its position on (fewer, or none, when caught up).

        A position outside ``[log start, log end]`` raises :class:`OffsetOutOfRangeError`.
        """

    def close(self) -> None:
        """Release connections."""


@dataclass(frozen=True)
class SourceSpec:
    """A parsed ``spark.groupcoord.source``: the embedded log of ``state_root``, or Kafka ``bootstrap`` servers."""

    state_root: str
    bootstrap: tuple[tuple[str, int], ...] | None = None

    @classmethod
    def parse(cls, source: str, *, state_root: str | StateRoot) -> SourceSpec:
        """``embedded`` or ``kafka://HOST:PORT[,HOST:PORT]``; anything else raises :class:`ConfigError`."""
        root = str(state_root.path if isinstance(state_root, StateRoot) else state_root)
        if source == EMBEDDED:
            return cls(root)
        if source.startswith(KAFKA_SCHEME):
            try:
                return cls(root, parse_bootstrap(source.removeprefix(KAFKA_SCHEME)))
            except ValueError as exc:
                raise ConfigError(f"source {source!r}: {exc}") from None
        raise ConfigError(f"source {source!r} is neither '{EMBEDDED}' nor {KAFKA_SCHEME}HOST:PORT[,HOST:PORT]")

    @property
    def is_kafka(self) -> bool:
        """True for a Kafka cluster, False for the embedded topic log."""
        return self.bootstrap is not None

    @property
    def bootstrap_servers(self) -> list[str]:
        """The Kafka bootstrap servers as ``HOST:PORT`` strings (empty for the embedded log)."""
        return [f"{host}:{port}" for host, port in self.bootstrap or ()]

    def open_reader(self, *, client_id: str = "groupcoord-ingest") -> PartitionReader:
        """A reader for this source (a Kafka consumer with no group, or the embedded log)."""
        if self.bootstrap is not None:
            from groupcoord.ingest.kafka_source import KafkaReader

            return KafkaReader(self.bootstrap_servers, client_id=client_id)
        return EmbeddedReader(StateRoot.open(self.state_root))

    def describe(self) -> str:
        """The source as the user wrote it."""
        return KAFKA_SCHEME + ",".join(self.bootstrap_servers) if self.bootstrap is not None else EMBEDDED


class EmbeddedReader:
    """Reads the state root's embedded topic logs (one cached :class:`TopicLog` per topic)."""

    def __init__(self, root: StateRoot) -> None:
        self._root = root
        self._catalog = TopicCatalog(root)
        self._logs: dict[str, TopicLog] = {}

    def _log(self, topic: str) -> TopicLog:
        log = self._logs.get(topic)
        if log is None:
            log = self._logs[topic] = TopicLog(self._root, topic, catalog=self._catalog)
        return log

    def bounds(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, PartitionOffsets]:
        """Start and end offsets from the logs' Delta statistics."""
        per_topic = {topic: self._log(topic).offsets() for topic in {tp.topic for tp in partitions}}
        return {tp: per_topic[tp.topic].get(tp.partition, PartitionOffsets(0, 0)) for tp in partitions}

    def read(self, positions: Mapping[TopicPartition, int], max_records: int) -> dict[TopicPartition, pa.Table]:
        """One bounded read per partition."""
        return {tp: self._log(tp.topic).read(tp.partition, offset, max_records) for tp, offset in positions.items()}

    def close(self) -> None:
        """Nothing to release."""
