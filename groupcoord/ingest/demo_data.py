"""Deterministic demo data for the embedded topic log: record ``i`` goes to partition ``i % partitions`` with value
``b"record-<i>"``, so a check can name exactly which records a sink is missing or holds twice."""

from __future__ import annotations

import logging

from groupcoord.state_root import StateRoot
from groupcoord.topics import ProducerRecord, TopicCatalog, TopicLog

log = logging.getLogger("groupcoord.ingest.demo")

PRODUCE_CHUNK = 50000


def demo_value(index: int) -> bytes:
    """The value of demo record ``index``."""
    return f"record-{index}".encode()


def create_demo_topic(root: StateRoot, topic: str, *, partitions: int, records: int) -> None:
    """Create ``topic`` and produce ``records`` demo records into it (in chunks of one commit each)."""
    catalog = TopicCatalog(root)
    catalog.create(topic, partitions)
    topic_log = TopicLog(root, topic, catalog=catalog)
    for first in range(0, records, PRODUCE_CHUNK):
        chunk = range(first, min(first + PRODUCE_CHUNK, records))
        topic_log.produce(ProducerRecord(demo_value(i), key=str(i).encode(), partition=i % partitions)
                          for i in chunk)
    log.info("produced %d records into %s (%d partitions)", records, topic, partitions)
