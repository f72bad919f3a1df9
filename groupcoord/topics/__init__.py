"""Topics: the catalog of topics and partition counts, and the embedded topic logs (one Delta table per topic).

A topic log's semantics, on the log layer it shares with the record log (:mod:`groupcoord.storage`): **many
writers** (the CLI, the Python API and the serving process's Produce, in any process, with no lease), each produce a
conditional commit that re-reads and renumbers when another writer took its version, so offsets stay dense and
nothing is lost or reordered; **no fsync**: a produce returns, and Produce acknowledges, once its commit is written,
as a Kafka broker with its default ``flush.messages`` (see :mod:`groupcoord.topics.topic_log`).

Public API::

    TopicCatalog(root).create("events", 3)           # conditional commit; errors carry Kafka codes
    TopicCatalog(root).partition_counts()            # {"events": 3}, cheap to poll
    TopicLog(root, "events").produce([ProducerRecord(b"v", key=b"k")])
    TopicLog(root, "events").read(0, 0, 100)         # Arrow table: partition, offset, timestamp, key, value, headers...
"""

from __future__ import annotations

from groupcoord.topics.catalog import TopicCatalog, TopicInfo
from groupcoord.topics.config import TopicsConfig
from groupcoord.topics.errors import (
    InvalidPartitionsError,
    InvalidTopicError,
    OffsetOutOfRangeError,
    RequestTimedOutError,
    TopicAlreadyExistsError,
    TopicError,
    UnknownTopicOrPartitionError,
)
from groupcoord.topics.murmur2 import murmur2, partition_for_key
from groupcoord.topics.names import validate_topic_name
from groupcoord.topics.topic_log import PartitionOffsets, ProduceResult, ProducerRecord, TopicLog, TopicRecord

__all__ = [
    "InvalidPartitionsError",
    "InvalidTopicError",
    "OffsetOutOfRangeError",
    "PartitionOffsets",
    "ProduceResult",
    "ProducerRecord",
    "RequestTimedOutError",
    "TopicAlreadyExistsError",
    "TopicCatalog",
    "TopicError",
    "TopicInfo",
    "TopicLog",
    "TopicRecord",
    "TopicsConfig",
    "UnknownTopicOrPartitionError",
    "murmur2",
    "partition_for_key",
    "validate_topic_name",
]
