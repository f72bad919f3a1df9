"""Frozen configuration of the storage layer, built from the resolved ``spark.groupcoord.*`` keys."""

from __future__ import annotations

from dataclasses import dataclass, field

from groupcoord.config import PREFIX, ConfigError
from groupcoord.config.binding import KeyedConfig, from_key


@dataclass(frozen=True, kw_only=True)
class LogConfig(KeyedConfig):
    """Record log and commit batcher settings (``log.*``), and ``history.retention.hours`` for the other tables
    the holder maintains."""

    linger_ms: int = field(default=0, metadata=from_key("log.linger.ms"))
    min_commit_interval_ms: int = field(default=0, metadata=from_key("log.min.commit.interval.ms"))
    fsync: bool = field(default=True, metadata=from_key("log.fsync"))
    checkpoint_interval: int = field(default=10, metadata=from_key("log.checkpoint.interval"))
    snapshot_interval: int = field(default=100_000, metadata=from_key("log.snapshot.interval"))
    retention_hours: int = field(default=168, metadata=from_key("history.retention.hours"))
    retention_minutes: int = field(default=10, metadata=from_key("log.retention.minutes"))
    maintenance_interval_ms: int = field(default=60_000, metadata=from_key("log.maintenance.interval.ms"))


@dataclass(frozen=True, kw_only=True)
class LeaseConfig(KeyedConfig):
    """Election lease timing (``lease.*``). A holder must be able to renew at least once inside its safe window."""

    renew_interval_ms: int = field(default=2000, metadata=from_key("lease.renew.interval.ms"))
    timeout_ms: int = field(default=10_000, metadata=from_key("lease.timeout.ms"))
    safety_ms: int = field(default=2000, metadata=from_key("lease.safety.ms"))
    retention_hours: int = field(default=168, metadata=from_key("history.retention.hours"))

    def __post_init__(self) -> None:
        if self.renew_interval_ms + self.safety_ms >= self.timeout_ms:
            raise ConfigError(
                f"{PREFIX}lease.renew.interval.ms ({self.renew_interval_ms}) plus {PREFIX}lease.safety.ms "
                f"({self.safety_ms}) must be below {PREFIX}lease.timeout.ms ({self.timeout_ms})"
            )
