"""The topic layer's settings as one frozen dataclass, built from the ``spark.groupcoord.*`` registry."""

from __future__ import annotations

from dataclasses import dataclass

from groupcoord.config import Config, resolve_config


@dataclass(frozen=True, kw_only=True)
class TopicsConfig:
    """Settings of the topic catalog and the topic log (see :mod:`groupcoord.config.keys` for each key)."""

    metadata_refresh_ms: int = 1000
    commit_backoff_ms: int = 5
    commit_timeout_ms: int = 60000
    produce_batch_records: int = 50000

    @classmethod
    def from_config(cls, config: Config | None = None) -> TopicsConfig:
        """Read the keys from a resolved :class:`~groupcoord.config.Config` (the defaults when ``None``)."""
        config = config if config is not None else resolve_config()
        return cls(
            metadata_refresh_ms=config["metadata.refresh.ms"],
            commit_backoff_ms=config["topics.commit.backoff.ms"],
            commit_timeout_ms=config["topics.commit.timeout.ms"],
            produce_batch_records=config["topics.produce.batch.records"],
        )
