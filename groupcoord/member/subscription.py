"""What a member subscribes to and owns, in the ConsumerProtocol's shapes.

A ``pattern`` matches whole topic names (``re.fullmatch``, as Kafka's Java client does), against the topic
catalog of the state root or the broker's Metadata. Owned partitions travel in the Subscription (v1+), so that a
cooperative assignor can keep them where they are.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from kafka.structs import TopicPartition

from groupcoord.protocol.consumer_protocol import (
    Assignment,
    Subscription,
    TopicPartitions,
    decode_assignment,
    encode_subscription,
)
from groupcoord.state_root import StateRoot
from groupcoord.topics import TopicCatalog

PartitionCounts = Callable[[], Mapping[str, int]]
"""Returns every topic that exists now, with its partition count."""


def catalog_partition_counts(state_root: Path | StateRoot) -> PartitionCounts:
    """Topics and partition counts from the topic catalog of ``state_root``."""
    catalog = TopicCatalog(state_root if isinstance(state_root, StateRoot) else StateRoot.open(state_root))
    return catalog.partition_counts


def matching_topics(pattern: re.Pattern[str], topics: Iterable[str]) -> tuple[str, ...]:
    """The topics whose whole name matches ``pattern``, sorted."""
    return tuple(sorted(t for t in topics if pattern.fullmatch(t)))


def grouped(partitions: Iterable[TopicPartition]) -> tuple[TopicPartitions, ...]:
    """Partitions grouped by topic, sorted (the ConsumerProtocol layout)."""
    by_topic: dict[str, list[int]] = {}
    for tp in sorted(set(partitions)):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return tuple(TopicPartitions(topic, tuple(parts)) for topic, parts in by_topic.items())


def flattened(groups: Iterable[TopicPartitions]) -> frozenset[TopicPartition]:
    """The partitions of ConsumerProtocol topic groups."""
    return frozenset(TopicPartition(g.topic, p) for g in groups for p in g.partitions)


def subscription_metadata(topics: Iterable[str], owned: Iterable[TopicPartition], generation_id: int) -> bytes:
    """The JoinGroup metadata of a member: its topics, the partitions it owns, its last generation."""
    return encode_subscription(Subscription(topics=tuple(sorted(topics)), owned_partitions=grouped(owned),
                                            generation_id=generation_id))


def assigned_partitions(data: bytes) -> frozenset[TopicPartition]:
    """The partitions of an encoded ConsumerProtocol Assignment (empty bytes: nothing)."""
    assignment: Assignment = decode_assignment(data)
    return flattened(assignment.partitions)
