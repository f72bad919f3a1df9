"""Helpers of the source's tests: fast settings, producing to the embedded log, readers driven as Spark drives them."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from kafka.structs import TopicPartition

from groupcoord.devbroker import KafkaBroker, Record
from groupcoord.member import GroupMember, MemberOptions
from groupcoord.source.data_source import GroupcoordStreamReader
from groupcoord.source.options import parse_source_options
from groupcoord.state_root import StateRoot
from groupcoord.topics import ProducerRecord, TopicCatalog, TopicLog

FAST_CONF = {
    "spark.groupcoord.listen": "127.0.0.1:0",
    "spark.groupcoord.group.min.session.timeout.ms": "500",
    "spark.groupcoord.group.initial.rebalance.delay.ms": "0",
    "spark.groupcoord.member.retry.backoff.ms": "20",
    "spark.groupcoord.member.retry.backoff.max.ms": "200",
    "spark.groupcoord.member.request.timeout.ms": "10000",
    "spark.groupcoord.assignor.warmup": "false",
}
"""Coordinator and member settings that keep these tests short (no initial rebalance delay, short backoffs)."""

SOURCE_TIMING = {"session.timeout.ms": "10000", "heartbeat.interval.ms": "300", "rebalance.timeout.ms": "30000"}
"""Member timing of the tests' queries: a lost member is noticed in seconds, a stuck rebalance fails in 30 s."""


def produce(root: StateRoot, topic: str, partitions: int, per_partition: int, *, first: int = 0) -> None:
    """``per_partition`` records to each partition of ``topic`` (created when missing): value ``<p>-<n>``."""
    Feed(root).produce(topic, partitions, per_partition, first=first)


@dataclass
class Feed:
    """Where a reader's records come from: the state root's embedded log, or the Kafka ``broker``."""

    root: StateRoot
    broker: KafkaBroker | None = None
    created: set[str] = field(default_factory=set)

    def topic(self, name: str) -> str:
        """``name`` on the embedded log; a name of its own on the broker (shared by the session)."""
        return name if self.broker is None else f"{name}-{uuid.uuid4().hex[:8]}"

    def produce(self, topic: str, partitions: int, per_partition: int, *, first: int = 0,
                only: Iterable[int] | None = None) -> None:
        """``per_partition`` records to each partition of ``topic`` (or to the ``only`` ones), creating it with
        ``partitions`` partitions when missing: value ``<p>-<n>``, key ``k<n>``, for n from ``first``."""
        chosen = range(partitions) if only is None else only
        records = [(p, f"{p}-{n}".encode(), f"k{n}".encode())
                   for p in chosen for n in range(first, first + per_partition)]
        if self.broker is None:
            if topic not in TopicCatalog(self.root).partition_counts():
                TopicCatalog(self.root).create(topic, partitions)
            TopicLog(self.root, topic).produce([ProducerRecord(v, key=k, partition=p) for p, v, k in records])
            return
        if topic not in self.created:
            self.broker.create_topic(topic, partitions)
            self.created.add(topic)
        self.broker.produce(topic, [Record(v, key=k, partition=p) for p, v, k in records])

    def grow(self, topic: str, partitions: int) -> None:
        """Give ``topic`` ``partitions`` partitions in all."""
        if self.broker is None:
            TopicCatalog(self.root).alter(topic, partitions)
            return
        from confluent_kafka.admin import AdminClient
        from confluent_kafka.cimpl import NewPartitions

        admin = AdminClient({"bootstrap.servers": self.broker.bootstrap})  # alive until the futures resolve
        for future in admin.create_partitions([NewPartitions(topic, partitions)]).values():
            future.result(30)

    def options(self) -> dict[str, str]:
        """The reader options that say where records come from."""
        return {} if self.broker is None else {"kafka.bootstrap.servers": self.broker.bootstrap}


def reader(root: StateRoot, topic: str, **options: str) -> GroupcoordStreamReader:
    """A stream reader of group ``g`` as the source builds it from its options (client-side cooperative-sticky)."""
    values = {"group.id": "g", "state.root": str(root.path), "subscribe": topic, "startingOffsets": "earliest",
              "assignors": "cooperative-sticky", **SOURCE_TIMING, **options}
    return GroupcoordStreamReader(parse_source_options(values, FAST_CONF))


def read_batch(source: GroupcoordStreamReader, start: Mapping[str, Any], end: Mapping[str, Any]) -> pa.Table:
    """What the executors would read for the batch from ``start`` to ``end``."""
    batches = [batch for part in source.partitions(dict(start), dict(end)) for batch in source.read(part)]
    return pa.Table.from_batches(batches) if batches else pa.table({})


def committed(root: StateRoot, group: str, partitions: list[TopicPartition]) -> dict[TopicPartition, int | None]:
    """The group's committed offsets, fetched by a client that does not join."""
    client = GroupMember(group, topics=sorted({tp.topic for tp in partitions}), state_root=root.path,
                         options=MemberOptions(request_timeout_ms=10000))
    try:
        return {tp: (o.offset if o is not None else None) for tp, o in client.committed(partitions).items()}
    finally:
        client.close()
