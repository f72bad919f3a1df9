"""Frozen configuration of the storage layer, built from the resolved ``spark.groupcoord.*`` keys."""

from __future__ import annotations

from dataclasses import dataclass

from groupcoord.config import PREFIX, Config, ConfigError


@dataclass(frozen=True, kw_only=True)
class LogConfig:
    """Record log and commit batcher settings (``log.*`` and ``history.retention.hours``)."""

    linger_ms: int = 5
    min_commit_interval_ms: int = 50
    checkpoint_interval: int = 10
    snapshot_interval: int = 100_000
    retention_hours: int = 168
    maintenance_interval_ms: int = 60_000

    @classmethod
    def from_config(cls, config: Config) -> LogConfig:
        """Read the ``log.*`` keys and the history retention from ``config``."""
        return cls(
            linger_ms=config["log.linger.ms"],
            min_commit_interval_ms=config["log.min.commit.interval.ms"],
            checkpoint_interval=config["log.checkpoint.interval"],
            snapshot_interval=config["log.snapshot.interval"],
            retention_hours=config["history.retention.hours"],
            maintenance_interval_ms=config["log.maintenance.interval.ms"],
        )


@dataclass(frozen=True, kw_only=True)
class LeaseConfig:
    """Election lease timing (``lease.*``). A holder must be able to renew at least once inside its safe window."""

    renew_interval_ms: int = 2000
    timeout_ms: int = 10_000
    safety_ms: int = 2000
    retention_hours: int = 168

    def __post_init__(self) -> None:
        if self.renew_interval_ms + self.safety_ms >= self.timeout_ms:
            raise ConfigError(
                f"{PREFIX}lease.renew.interval.ms ({self.renew_interval_ms}) plus {PREFIX}lease.safety.ms "
                f"({self.safety_ms}) must be below {PREFIX}lease.timeout.ms ({self.timeout_ms})"
            )

    @classmethod
    def from_config(cls, config: Config) -> LeaseConfig:
        """Read the ``lease.*`` keys and the history retention from ``config``."""
        return cls(
            renew_interval_ms=config["lease.renew.interval.ms"],
            timeout_ms=config["lease.timeout.ms"],
            safety_ms=config["lease.safety.ms"],
            retention_hours=config["history.retention.hours"],
        )
