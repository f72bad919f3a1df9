"""The member client's configuration: what the constructor is given, validated once, frozen."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from groupcoord.config.binding import KeyedConfig, from_key
from groupcoord.config.resolve import Config, resolve_config
from groupcoord.member.heartbeat import HeartbeatTiming
from groupcoord.security.config import ClientSecurity
from groupcoord.state_root import StateRoot

DEFAULT_ASSIGNORS: tuple[str, ...] = ("server-cooperative-sticky",)
"""What a member offers when it is not told: the coordinator's cooperative sticky assignor."""

COOPERATIVE_ASSIGNORS = frozenset({"cooperative-sticky", "server-cooperative-sticky"})
"""Assignors that support KIP-429 incremental (cooperative) rebalancing."""


@dataclass(frozen=True, kw_only=True)
class MemberOptions(KeyedConfig):
    """Client settings from the ``spark.groupcoord.member.*`` keys and the client security keys."""

    retry_backoff_ms: int = field(default=100, metadata=from_key("member.retry.backoff.ms"))
    retry_backoff_max_ms: int = field(default=2000, metadata=from_key("member.retry.backoff.max.ms"))
    request_timeout_ms: int = field(default=30000, metadata=from_key("member.request.timeout.ms"))
    metadata_max_age_ms: int = field(default=5000, metadata=from_key("member.metadata.max.age.ms"))
    auto_commit_interval_ms: int = field(default=5000, metadata=from_key("member.auto.commit.interval.ms"))
    client_id: str = field(default="groupcoord-member", metadata=from_key("member.client.id"))
    security: ClientSecurity = field(default_factory=ClientSecurity)
    """How to connect: ``listener.security.protocol``, ``sasl.*`` and ``ssl.*`` (the password from
    ``sasl.password.file`` or ``GROUPCOORD_SASL_PASSWORD``, read once here and never shown in a ``repr``)."""

    @classmethod
    def from_config(cls, config: Config | None = None) -> MemberOptions:
        """Every bound field, and the client security settings, from ``config``."""
        resolved = config if config is not None else resolve_config()
        return replace(super().from_config(resolved), security=ClientSecurity.from_config(resolved))


def parse_bootstrap(servers: str | Sequence[str]) -> tuple[tuple[str, int], ...]:
    """``"h1:9092,h2:9092"`` or ``["h1:9092", ...]`` as ``(host, port)`` pairs; raises ``ValueError``."""
    items = servers.split(",") if isinstance(servers, str) else list(servers)
    parsed = []
    for item in (s.strip() for s in items):
        host, sep, port = item.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(f"bootstrap server {item!r} is not HOST:PORT")
        parsed.append((host.strip("[]"), int(port)))
    if not parsed:
        raise ValueError("bootstrap_servers is empty")
    return tuple(parsed)


@dataclass(frozen=True, kw_only=True)
class MemberConfig:
    """Everything a :class:`~groupcoord.member.GroupMember` is configured with."""

    group_id: str
    topics: tuple[str, ...] | None
    pattern: re.Pattern[str] | None
    bootstrap_servers: tuple[tuple[str, int], ...] | None
    state_root: Path | StateRoot | None
    group_instance_id: str | None
    timing: HeartbeatTiming
    assignors: tuple[str, ...]
    enable_auto_commit: bool
    options: MemberOptions = field(default_factory=MemberOptions)

    def __post_init__(self) -> None:
        problems = []
        if not self.group_id:
            problems.append("group_id must not be empty")
        if (self.topics is None) == (self.pattern is None):
            problems.append("pass exactly one of topics or pattern")
        if (self.bootstrap_servers is None) == (self.state_root is None):
            problems.append("pass exactly one of bootstrap_servers or state_root")
        if self.topics is not None and (not self.topics or not all(self.topics)):
            problems.append("topics must be a non-empty list of topic names")
        if not self.assignors:
            problems.append("assignors must name at least one assignor")
        if self.group_instance_id == "":
            problems.append("group_instance_id must not be empty (use None for a dynamic member)")
        if problems:
            raise ValueError("GroupMember: " + "; ".join(problems))

    @property
    def cooperative(self) -> bool:
        """KIP-429 incremental rebalancing: only when every assignor named supports it, as in Kafka."""
        return all(name in COOPERATIVE_ASSIGNORS for name in self.assignors)
