"""The coordinator core's configuration, built from the ``spark.groupcoord.*`` registry."""

from __future__ import annotations

from dataclasses import dataclass, field

from groupcoord.config.binding import KeyedConfig, from_key, minutes_to_ms

NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000
"""How long a brand-new member's JoinGroup may stay parked before it is dropped (Kafka's constant)."""


@dataclass(frozen=True, kw_only=True)
class CoordinatorConfig(KeyedConfig):
    """Limits and timings of the group coordinator (Kafka's ``group.*`` and ``offsets.*`` broker settings).

    ``server_side_assignment`` says whether the shell can compute ``server-<assignor>`` assignments; the host turns
    it off when it has no assignment runner (``serve --no-spark``), and JoinGroup then refuses those protocols.

    The ``consumer_group_*`` settings are Kafka's ``group.consumer.*`` broker settings of consumer groups (KIP-848),
    with Kafka's defaults: session timeout, heartbeat interval, maximum size and the server assignors (the first is
    the default, ``uniform`` as in Kafka). They have no ``spark.groupcoord.*`` key yet (the wiring step adds them).
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
    consumer_group_session_timeout_ms: int = 45_000
    consumer_group_heartbeat_interval_ms: int = 5_000
    consumer_group_max_size: int = 2**31 - 1
    consumer_group_assignors: tuple[str, ...] = ("uniform", "range")

    def __post_init__(self) -> None:
        if self.min_session_timeout_ms > self.max_session_timeout_ms:
            raise ValueError("group.min.session.timeout.ms must not exceed group.max.session.timeout.ms")
        if self.group_max_size < 1 or self.offsets_retention_ms <= 0:
            raise ValueError("group.max.size and offsets.retention.minutes must be positive")
