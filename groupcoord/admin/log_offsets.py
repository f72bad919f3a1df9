"""Offsets of the embedded topic log that admin commands need: log-start/log-end bounds and offsets for a time."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

import pyarrow as pa
import pyarrow.compute as pc

from groupcoord.state_root import StateRoot
from groupcoord.storage.tables import open_if_exists, table_dataset
from groupcoord.topics import PartitionOffsets, TopicCatalog, TopicLog

TopicPartitionKey = tuple[str, int]
"""(topic, partition)."""


def partition_counts(root: StateRoot) -> dict[str, int]:
    """Every topic of the catalog with its partition count."""
    return TopicCatalog(root).partition_counts()


def log_bounds(root: StateRoot, topics: Iterable[str]) -> dict[TopicPartitionKey, PartitionOffsets]:
    """Log-start and log-end offsets of every partition of ``topics`` (from Delta statistics, no scan)."""
    catalog = TopicCatalog(root)
    bounds: dict[TopicPartitionKey, PartitionOffsets] = {}
    for topic in sorted(set(topics)):
        for partition, offsets in TopicLog(root, topic, catalog=catalog).offsets().items():
            bounds[topic, partition] = offsets
    return bounds


def offsets_for_time(root: StateRoot, topic: str, when: dt.datetime) -> dict[int, int]:
    """Per partition of ``topic``, the first offset whose record timestamp is at or after ``when``.

    Partitions with no such record are absent (Kafka then resets to the log-end offset). One scan of the
    ``partition``, ``offset`` and ``timestamp`` columns; files whose timestamps all lie before ``when`` are pruned.
    """
    table = open_if_exists(root.topic_path(topic))
    if table is None:
        return {}
    dataset = table_dataset(table)
    rows = dataset.to_table(columns=["partition", "offset"], filter=pc.field("timestamp") >= pa.scalar(when))
    if rows.num_rows == 0:
        return {}
    first = rows.group_by("partition").aggregate([("offset", "min")])
    return {int(p): int(o) for p, o in zip(first.column("partition").to_pylist(),
                                           first.column("offset_min").to_pylist(), strict=True)}
