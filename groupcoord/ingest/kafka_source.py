"""The Kafka source: members fetch their partitions with kafka-python's ``assign`` + ``seek`` (no Kafka-side group).

Our coordinator owns the group; the Kafka cluster only serves Fetch and ListOffsets. The driver copies the cluster's
partition counts into the topic catalog (:mod:`groupcoord.ingest.catalog_sync`), which is what the members' group
assigns from.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

import pyarrow as pa
from kafka import KafkaConsumer
from kafka.structs import TopicPartition

from groupcoord.topics import OffsetOutOfRangeError, PartitionOffsets
from groupcoord.topics.log_table import TOPIC_LOG_SCHEMA

log = logging.getLogger("groupcoord.ingest.kafka")

FETCH_WAIT_MS = 200
"""How long one read waits for records that are not there yet."""


def _consumer(servers: Sequence[str], client_id: str) -> KafkaConsumer:
    return KafkaConsumer(bootstrap_servers=list(servers), client_id=client_id, group_id=None,
                         enable_auto_commit=False, auto_offset_reset="earliest", fetch_max_wait_ms=FETCH_WAIT_MS,
                         request_timeout_ms=30000)


class KafkaReader:
    """Reads explicitly assigned partitions of a Kafka cluster at explicitly chosen offsets."""

    def __init__(self, servers: Sequence[str], *, client_id: str = "groupcoord-ingest") -> None:
        self._consumer = _consumer(servers, client_id)
        self._assigned: frozenset[TopicPartition] = frozenset()

    def bounds(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, PartitionOffsets]:
        """ListOffsets for the earliest and latest offset of each partition."""
        if not partitions:
            return {}
        starts = self._consumer.beginning_offsets(list(partitions))
        ends = self._consumer.end_offsets(list(partitions))
        return {tp: PartitionOffsets(int(starts[tp]), int(ends[tp])) for tp in partitions}

    def read(self, positions: Mapping[TopicPartition, int], max_records: int) -> dict[TopicPartition, pa.Table]:
        """Seek every partition to its position and poll once; at most ``max_records`` per partition are kept."""
        wanted = frozenset(positions)
        if wanted != self._assigned:
            self._consumer.assign(sorted(wanted))
            self._assigned = wanted
        bounds = self.bounds(sorted(wanted))
        for tp, offset in positions.items():
            check_in_range(tp, offset, bounds[tp])
            self._consumer.seek(tp, offset)
        pending = {tp for tp, offset in positions.items() if offset < bounds[tp].end}
        rows: dict[TopicPartition, list[dict[str, object]]] = {tp: [] for tp in positions}
        deadline = time.monotonic() + FETCH_WAIT_MS / 1000 * 5
        while pending and time.monotonic() < deadline:
            fetched = self._consumer.poll(timeout_ms=FETCH_WAIT_MS, max_records=max_records * len(positions),
                                          update_offsets=True)
            for tp, records in fetched.items():
                kept = rows[tp]
                for record in records:
                    if len(kept) >= max_records or record.offset < positions[tp]:
                        continue
                    kept.append({"partition": tp.partition, "offset": record.offset,
                                 "timestamp": datetime.fromtimestamp(record.timestamp / 1000, UTC),
                                 "key": record.key, "value": record.value})
                pending.discard(tp)
        # No pause() of a full partition: kafka-python 3.0.12 parks a paused partition's buffered records and, once
        # they are drained by a seek, never fetches that partition again (a real broker's multi-record batches hit it).
        # The records past ``max_records`` are dropped instead, and the next read seeks anyway.
        return {tp: pa.Table.from_pylist(kept, schema=TOPIC_LOG_SCHEMA) for tp, kept in rows.items()}

    def close(self) -> None:
        """Close the consumer's connections."""
        self._consumer.close()


def kafka_partition_counts(servers: Sequence[str], *, client_id: str = "groupcoord-ingest-metadata") -> dict[str, int]:
    """Partition count of every topic of the cluster (internal ``__`` topics left out)."""
    consumer = _consumer(servers, client_id)
    try:
        counts = {}
        for topic in consumer.topics():
            if topic.startswith("__"):
                continue
            partitions = consumer.partitions_for_topic(topic)
            if partitions:
                counts[topic] = len(partitions)
        return counts
    finally:
        consumer.close()


def check_in_range(tp: TopicPartition, offset: int, bounds: PartitionOffsets) -> None:
    """Raise :class:`OffsetOutOfRangeError` unless ``bounds.start <= offset <= bounds.end``."""
    if not bounds.start <= offset <= bounds.end:
        raise OffsetOutOfRangeError(
            f"Offset {offset} is out of range for partition {tp.topic}-{tp.partition} "
            f"(log start {bounds.start}, log end {bounds.end})."
        )
