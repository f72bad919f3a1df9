"""The streaming ingestion job: sources (embedded topic log, Kafka), the exactly-once Delta sink, the per-member
work loop, and the driver that runs it on Spark executors (``jobs/streaming_ingest.py``)."""

from __future__ import annotations
