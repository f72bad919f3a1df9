"""The schema and creation of one topic's log table (``<root>/topics/<name>``).

Columns: ``partition int`` (the Delta partition column, so a read of one partition opens only its directory),
``offset long`` (dense per partition, from 0), ``timestamp`` (UTC), ``key binary``, ``value binary``.
"""

from __future__ import annotations

import pyarrow as pa
from deltalake import DeltaTable

from groupcoord.state_root import StateRoot
from groupcoord.topics.local_delta import open_or_create

TOPIC_LOG_SCHEMA = pa.schema([
    pa.field("partition", pa.int32(), nullable=False),
    pa.field("offset", pa.int64(), nullable=False),
    pa.field("timestamp", pa.timestamp("us", tz="UTC"), nullable=False),
    pa.field("key", pa.binary(), nullable=True),
    pa.field("value", pa.binary(), nullable=True),
])
PARTITION_COLUMNS = ["partition"]


def create_topic_log(root: StateRoot, topic: str) -> DeltaTable:
    """Open the log table of ``topic`` (an already validated name), creating it empty if it is missing."""
    return open_or_create(root.topic_path(topic), TOPIC_LOG_SCHEMA, partition_by=PARTITION_COLUMNS,
                          name=topic, description=f"groupcoord topic log of {topic}")
