"""A member of a live classic group: identity, timeouts, protocols, assignment, and its parked requests."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

from groupcoord.group.metadata import MemberMetadataValue
from groupcoord.protocol.requests import JoinGroupProtocol

Token = Hashable
"""Identifies a request whose response is parked; the shell chooses it (a connection and correlation id...)."""


@dataclass(eq=False)
class Member:
    """A live member. ``join_tokens``/``sync_tokens`` are requests parked until the join or sync completes."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: tuple[JoinGroupProtocol, ...]
    assignment: bytes = b""
    is_new: bool = False
    join_tokens: list[Token] = field(default_factory=list)
    sync_tokens: list[Token] = field(default_factory=list)

    @property
    def is_static(self) -> bool:
        """True for a member with a ``group.instance.id`` (KIP-345)."""
        return self.group_instance_id is not None

    @property
    def is_awaiting_join(self) -> bool:
        """True while a JoinGroup from this member is parked."""
        return bool(self.join_tokens)

    @property
    def is_awaiting_sync(self) -> bool:
        """True while a SyncGroup from this member is parked."""
        return bool(self.sync_tokens)

    @property
    def protocol_names(self) -> list[str]:
        """The member's protocols, in its order of preference."""
        return [p.name for p in self.protocols]

    def metadata(self, protocol_name: str) -> bytes:
        """The member's metadata for ``protocol_name``; raises ``KeyError`` if it does not support it."""
        for protocol in self.protocols:
            if protocol.name == protocol_name:
                return protocol.metadata
        raise KeyError(protocol_name)

    def matches(self, protocols: tuple[JoinGroupProtocol, ...]) -> bool:
        """True when ``protocols`` are exactly this member's (same names, order and metadata)."""
        return protocols == self.protocols

    def to_value(self) -> MemberMetadataValue:
        """This member as persisted in a completed generation."""
        return MemberMetadataValue(
            member_id=self.member_id, group_instance_id=self.group_instance_id, client_id=self.client_id,
            client_host=self.client_host, rebalance_timeout_ms=self.rebalance_timeout_ms,
            session_timeout_ms=self.session_timeout_ms, protocols=self.protocols, assignment=self.assignment)

    @classmethod
    def from_value(cls, value: MemberMetadataValue, protocol_type: str) -> Member:
        """A live member rebuilt from its persisted form (after a load)."""
        return cls(member_id=value.member_id, group_instance_id=value.group_instance_id, client_id=value.client_id,
                   client_host=value.client_host, rebalance_timeout_ms=value.rebalance_timeout_ms,
                   session_timeout_ms=value.session_timeout_ms, protocol_type=protocol_type,
                   protocols=value.protocols, assignment=value.assignment)
