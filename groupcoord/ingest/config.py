"""The ingestion job's settings (the ``spark.groupcoord.*`` keys of jobs/streaming_ingest.py as one frozen object)
and the columns of the table it writes."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

import pyarrow as pa

from groupcoord.config import ConfigError
from groupcoord.config.binding import KeyedConfig, from_key, split_list, split_list_or_none
from groupcoord.config.registry import PREFIX

OffsetReset = Literal["earliest", "latest"]

SINK_SCHEMA = pa.schema([
    pa.field("topic", pa.string(), nullable=False),
    pa.field("partition", pa.int32(), nullable=False),
    pa.field("offset", pa.int64(), nullable=False),
    pa.field("timestamp", pa.timestamp("us", tz="UTC"), nullable=False),
    pa.field("key", pa.binary(), nullable=True),
    pa.field("value", pa.binary(), nullable=True),
])
"""The job's sink table, whichever engine writes it: ``topic, partition, offset, timestamp, key, value`` (the
``groupcoord`` source's columns without ``timestampType`` and headers)."""


def _or_empty(value: str | None) -> str:
    return value or ""


@dataclass(frozen=True, kw_only=True)
class IngestConfig(KeyedConfig):
    """What one ingestion run consumes, from where, into which sink, with how many members.

    Exactly one of ``topics`` and ``pattern`` is set. ``source`` is ``embedded`` or ``kafka://HOST:PORT[,...]``.
    """

    group_id: str = field(metadata=from_key("group.id", convert=_or_empty))
    topics: tuple[str, ...] | None = field(metadata=from_key("topics", convert=split_list_or_none))
    pattern: str | None = field(metadata=from_key("pattern"))
    source: str = field(metadata=from_key("source"))
    sink: str = field(metadata=from_key("sink", convert=_or_empty))
    members: int = field(metadata=from_key("members"))
    available_now: bool = field(default=False, metadata=from_key("available.now"))
    auto_offset_reset: OffsetReset = field(default="earliest", metadata=from_key("auto.offset.reset"))
    max_records_per_batch: int = field(default=10000, metadata=from_key("max.records.per.batch"))
    metadata_refresh_ms: int = field(default=30000, metadata=from_key("source.metadata.refresh.ms"))
    kafka_config_file: str | None = field(default=None, metadata=from_key("source.kafka.config.file"))
    assignors: tuple[str, ...] = field(default=("server-cooperative-sticky",),
                                       metadata=from_key("assignors", convert=split_list))

    def __post_init__(self) -> None:
        problems = []
        if not self.group_id:
            problems.append(f"no group: pass --group or set {PREFIX}group.id")
        if (self.topics is None) == (self.pattern is None):
            problems.append(f"pass exactly one of --topics ({PREFIX}topics) and --pattern ({PREFIX}pattern)")
        if self.topics is not None and not all(self.topics):
            problems.append("--topics has an empty topic name")
        if self.pattern is not None:
            try:
                re.compile(self.pattern)
            except re.error as exc:
                problems.append(f"--pattern {self.pattern!r} is not a regular expression: {exc}")
        if not self.assignors or not all(self.assignors):
            problems.append(f"{PREFIX}assignors must name at least one assignor")
        if not self.sink:
            problems.append(f"no sink: pass --sink or set {PREFIX}sink")
        if problems:
            raise ConfigError("; ".join(problems))
