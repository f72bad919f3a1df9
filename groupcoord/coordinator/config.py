"""The coordinator core's configuration, built from the ``spark.groupcoord.*`` registry."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from groupcoord.config.binding import KeyedConfig, from_key, minutes_to_ms


def assignor_names(value: str) -> tuple[str, ...]:
    """``group.consumer.assignors``'s comma-separated names as a tuple (blanks dropped)."""
    return tuple(name.strip() for name in value.split(",") if name.strip())


class MigrationPolicy(Enum):
    """Kafka's ``group.consumer.migration.policy``: which online conversions between a classic group with members
    and a consumer group are allowed (an empty group converts either way whatever the policy)."""

    DISABLED = "disabled"
    UPGRADE = "upgrade"
    DOWNGRADE = "downgrade"
    BIDIRECTIONAL = "bidirectional"

    @property
    def upgrade_enabled(self) -> bool:
        """True when a classic group with members may become a consumer group."""
        return self in (MigrationPolicy.UPGRADE, MigrationPolicy.BIDIRECTIONAL)

    @property
    def downgrade_enabled(self) -> bool:
        """True when a consumer group left with classic members only may become a classic group."""
        return self in (MigrationPolicy.DOWNGRADE, MigrationPolicy.BIDIRECTIONAL)


NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000
"""How long a brand-new member's JoinGroup may stay parked before it is dropped (Kafka's constant)."""


@dataclass(frozen=True, kw_only=True)
class CoordinatorConfig(KeyedConfig):
    """Limits and timings of the group coordinator (Kafka's ``group.*`` and ``offsets.*`` broker settings).

    ``server_side_assignment`` says whether the shell can compute ``server-<assignor>`` assignments; the host turns
    it off when it has no assignment runner (``serve --no-spark``), and JoinGroup then refuses those protocols.

    The ``consumer_group_*`` settings are Kafka's ``group.consumer.*`` broker settings of consumer groups (KIP-848),
    with Kafka's defaults: session timeout, heartbeat interval, maximum size, the server assignors (the first is
    the default, ``uniform`` as in Kafka), the least time between two target assignments of a group (0: at once) and
    the migration policy between the two group types, from the ``group.consumer.*`` keys.
    """

    min_session_timeout_ms: int = field(default=6000, metadata=from_key("group.min.session.timeout.ms"))
    max_session_timeout_ms: int = field(default=1_800_000, metadata=from_key("group.max.session.timeout.ms"))
    initial_rebalance_delay_ms: int = field(default=3000, metadata=from_key("group.initial.rebalance.delay.ms"))
    group_max_size: int = field(default=2**31 - 1, metadata=from_key("group.max.size"))
    offsets_retention_ms: int = field(default=10080 * 60 * 1000,
                                      metadata=from_key("offsets.retention.minutes", convert=minutes_to_ms))
    offsets_retention_check_interval_ms: int = field(
        default=600_000, metadata=from_key("offsets.retention.check.interval.ms"))
    offset_metadata_max_bytes: int = field(default=4096, metadata=from_key("offset.metadata.max.bytes"))
    new_member_join_timeout_ms: int = NEW_MEMBER_JOIN_TIMEOUT_MS
    server_side_assignment: bool = True
    consumer_group_session_timeout_ms: int = field(default=45_000,
                                                   metadata=from_key("group.consumer.session.timeout.ms"))
    consumer_group_heartbeat_interval_ms: int = field(default=5_000,
                                                      metadata=from_key("group.consumer.heartbeat.interval.ms"))
    consumer_group_max_size: int = field(default=2**31 - 1, metadata=from_key("group.consumer.max.size"))
    consumer_group_assignors: tuple[str, ...] = field(
        default=("uniform", "range"), metadata=from_key("group.consumer.assignors", convert=assignor_names))
    consumer_group_assignment_interval_ms: int = field(
        default=0, metadata=from_key("group.consumer.assignment.interval.ms"))
    consumer_group_migration_policy: MigrationPolicy = field(
        default=MigrationPolicy.BIDIRECTIONAL,
        metadata=from_key("group.consumer.migration.policy", convert=MigrationPolicy))

    def __post_init__(self) -> None:
        if not self.consumer_group_assignors:
            raise ValueError("group.consumer.assignors must name at least one assignor")
        if self.consumer_group_heartbeat_interval_ms >= self.consumer_group_session_timeout_ms:
            raise ValueError("group.consumer.heartbeat.interval.ms must be below group.consumer.session.timeout.ms")
        if self.min_session_timeout_ms > self.max_session_timeout_ms:
            raise ValueError("group.min.session.timeout.ms must not exceed group.max.session.timeout.ms")
        if self.group_max_size < 1 or self.offsets_retention_ms <= 0:
            raise ValueError("group.max.size and offsets.retention.minutes must be positive")
