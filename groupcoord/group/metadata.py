"""The persisted form of a group (Kafka's ``GroupMetadataValue``): what a completed generation leaves in the log.

This is hard state. A rebalance in progress (joining members, the next generation before its assignment is
persisted) is soft and lives only in :class:`groupcoord.group.group.ClassicGroup`, as in Kafka's classic
coordinator: a coordinator that fails mid-rebalance comes back at the last completed generation (seed 004).
"""

from __future__ import annotations

from dataclasses import dataclass

from groupcoord.protocol.requests import JoinGroupProtocol


class GroupInvariantError(ValueError):
    """Persisted group metadata breaks an invariant (a leader that is no member, duplicate ids...)."""


@dataclass(frozen=True, kw_only=True)
class MemberMetadataValue:
    """One member of a completed generation: identity, timeouts, supported protocols and its assignment."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocols: tuple[JoinGroupProtocol, ...]
    assignment: bytes


@dataclass(frozen=True, kw_only=True)
class GroupMetadataValue:
    """A group's completed generation; ``members`` is empty for an Empty group."""

    protocol_type: str | None
    generation_id: int
    protocol_name: str | None
    leader_id: str | None
    state_timestamp_ms: int
    members: tuple[MemberMetadataValue, ...]

    def check_invariants(self) -> None:
        """Raise :class:`GroupInvariantError` when this value could not come from a real generation."""
        if self.generation_id < 0:
            raise GroupInvariantError(f"negative generation {self.generation_id}")
        ids = [m.member_id for m in self.members]
        if len(set(ids)) != len(ids) or "" in ids:
            raise GroupInvariantError(f"member ids must be unique and non-empty: {ids}")
        instances = [m.group_instance_id for m in self.members if m.group_instance_id is not None]
        if len(set(instances)) != len(instances):
            raise GroupInvariantError(f"duplicate group instance ids: {instances}")
        if self.members:
            if self.leader_id not in ids:
                raise GroupInvariantError(f"leader {self.leader_id!r} is not a member")
            if not self.protocol_type or not self.protocol_name:
                raise GroupInvariantError("a group with members needs a protocol type and a protocol name")
            for member in self.members:
                if self.protocol_name not in {p.name for p in member.protocols}:
                    raise GroupInvariantError(
                        f"member {member.member_id!r} does not support protocol {self.protocol_name!r}")
        elif self.leader_id is not None:
            raise GroupInvariantError("an empty group has no leader")
