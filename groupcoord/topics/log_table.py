"""The schema and creation of one topic's log table (``<root>/topics/<name>``).

Columns: ``partition int`` (the Delta partition column, so a read of one partition opens only its directory),
``offset long`` (dense per partition, from 0), ``timestamp`` (UTC), ``key binary``, ``value binary``, and since state
format 2 ``headers`` (``array<struct<key string, value binary>>``), ``timestamp_type int`` (0 CreateTime, 1
LogAppendTime) and ``compression string`` (the codec the producer's batch used: ``none``, ``gzip``, ``snappy``,
``lz4``, ``zstd``). The format-2 columns are null in rows written by format 1: readers take null as no headers,
CreateTime and no compression.
"""

from __future__ import annotations

import pyarrow as pa
from deltalake import DeltaTable

from groupcoord.state_format import FORMAT2_TOPIC_LOG_COLUMNS, HEADER_TYPE
from groupcoord.state_root import StateRoot
from groupcoord.storage.tables import open_or_create

__all__ = [
    "COMPRESSION_NAMES",
    "CREATE_TIME",
    "HEADER_TYPE",
    "LOG_APPEND_TIME",
    "NO_COMPRESSION",
    "PARTITION_COLUMNS",
    "TOPIC_LOG_SCHEMA",
    "Headers",
    "create_topic_log",
]

TOPIC_LOG_SCHEMA = pa.schema([
    pa.field("partition", pa.int32(), nullable=False),
    pa.field("offset", pa.int64(), nullable=False),
    pa.field("timestamp", pa.timestamp("us", tz="UTC"), nullable=False),
    pa.field("key", pa.binary(), nullable=True),
    pa.field("value", pa.binary(), nullable=True),
    *FORMAT2_TOPIC_LOG_COLUMNS,
])
PARTITION_COLUMNS = ["partition"]

CREATE_TIME = 0
"""Kafka's TimestampType CreateTime: the producer chose the timestamp (also what a null ``timestamp_type`` means)."""
LOG_APPEND_TIME = 1
"""Kafka's TimestampType LogAppendTime: the log set the timestamp when it appended the record."""

NO_COMPRESSION = "none"
COMPRESSION_NAMES: tuple[str, ...] = ("none", "gzip", "snappy", "lz4", "zstd")
"""Kafka's codec names, indexed by the codec id of a record batch's attributes."""

Headers = tuple[tuple[str, bytes | None], ...]
"""Record headers in order: ``(key, value)`` pairs; keys may repeat, values may be null."""


def create_topic_log(root: StateRoot, topic: str) -> DeltaTable:
    """Open the log table of ``topic`` (an already validated name), creating it empty if it is missing."""
    return open_or_create(root.topic_path(topic), TOPIC_LOG_SCHEMA, partition_by=PARTITION_COLUMNS,
                          name=topic, description=f"groupcoord topic log of {topic}")
