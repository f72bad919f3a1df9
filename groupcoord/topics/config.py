"""The topic layer's settings as one frozen dataclass, built from the ``spark.groupcoord.*`` registry."""

from __future__ import annotations

from dataclasses import dataclass, field

from groupcoord.config.binding import KeyedConfig, from_key


@dataclass(frozen=True, kw_only=True)
class TopicsConfig(KeyedConfig):
    """Settings of the topic catalog and the topic log (see :mod:`groupcoord.config.keys` for each key)."""

    metadata_refresh_ms: int = field(default=1000, metadata=from_key("metadata.refresh.ms"))
    commit_backoff_ms: int = field(default=5, metadata=from_key("topics.commit.backoff.ms"))
    commit_timeout_ms: int = field(default=60000, metadata=from_key("topics.commit.timeout.ms"))
    produce_batch_records: int = field(default=50000, metadata=from_key("topics.produce.batch.records"))
    produce_linger_ms: int = field(default=5, metadata=from_key("topics.produce.linger.ms"))
