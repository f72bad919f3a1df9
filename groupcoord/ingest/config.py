"""The ingestion job's settings: the ``spark.groupcoord.*`` keys of jobs/streaming_ingest.py as one frozen object."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from groupcoord.config import Config, ConfigError
from groupcoord.config.registry import PREFIX

OffsetReset = Literal["earliest", "latest"]


@dataclass(frozen=True, kw_only=True)
class IngestConfig:
    """What one ingestion run consumes, from where, into which sink, with how many members.

    Exactly one of ``topics`` and ``pattern`` is set. ``source`` is ``embedded`` or ``kafka://HOST:PORT[,...]``.
    """

    group_id: str
    topics: tuple[str, ...] | None
    pattern: str | None
    source: str
    sink: str
    members: int
    available_now: bool = False
    auto_offset_reset: OffsetReset = "earliest"
    max_records_per_batch: int = 10000
    metadata_refresh_ms: int = 30000
    assignors: tuple[str, ...] = ("server-cooperative-sticky",)

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

    @classmethod
    def from_config(cls, config: Config) -> IngestConfig:
        """Build from resolved configuration (raises :class:`ConfigError` naming what is missing)."""
        topics = config["topics"]
        return cls(
            group_id=config["group.id"] or "",
            topics=tuple(t.strip() for t in topics.split(",")) if topics else None,
            pattern=config["pattern"],
            source=config["source"],
            sink=config["sink"] or "",
            members=config["members"],
            available_now=config["available.now"],
            auto_offset_reset=config["auto.offset.reset"],
            max_records_per_batch=config["max.records.per.batch"],
            metadata_refresh_ms=config["source.metadata.refresh.ms"],
            assignors=tuple(a.strip() for a in config["assignors"].split(",")),
        )
