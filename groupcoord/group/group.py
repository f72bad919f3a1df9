"""The live classic group aggregate: state machine, members, generation, leader and protocol.

The aggregate only keeps books; it never decides *when* to rebalance or answer (the handlers in
:mod:`groupcoord.coordinator` do). Every state change goes through the guarded :meth:`ClassicGroup.transition_to`.
"""

from __future__ import annotations

from collections import Counter

from groupcoord.group.member import Member, Token
from groupcoord.group.metadata import GroupMetadataValue
from groupcoord.group.selection import candidate_protocols, select_protocol
from groupcoord.group.state import GroupState, IllegalStateTransition, can_rebalance, is_legal_transition
from groupcoord.protocol.consumer_protocol import PROTOCOL_TYPE as CONSUMER_PROTOCOL_TYPE
from groupcoord.protocol.consumer_protocol import subscribed_topics as decode_topics
from groupcoord.protocol.requests import JoinGroupProtocol
from groupcoord.protocol.responses import JoinGroupMember

SERVER_ASSIGNOR_PREFIX = "server-"
"""Protocols named ``server-<assignor>`` are assigned by the coordinator (seed 002), others by the leader."""


def is_server_side(protocol_name: str | None) -> bool:
    """True when the coordinator, not the group leader, computes the assignment for ``protocol_name``."""
    return protocol_name is not None and protocol_name.startswith(SERVER_ASSIGNOR_PREFIX)


class ClassicGroup:
    """One classic group as the coordinator keeps it in memory.

    ``members`` keeps join order (the leader falls back to the oldest member). ``pending_members`` are members that
    got MEMBER_ID_REQUIRED (KIP-394) and have not joined yet; ``pending_sync_members`` are members of the new
    generation that have not sent SyncGroup yet.

    Two tallies keep the checks every JoinGroup makes O(1): how many members have a parked JoinGroup, and how many
    members support each protocol name. They stay right because a member's protocols and parked JoinGroups only
    change through this class (:meth:`update_protocols`, :meth:`park_join`, :meth:`take_join_tokens`).
    """

    def __init__(self, group_id: str, *, now_ms: int) -> None:
        self.group_id = group_id
        self.state = GroupState.EMPTY
        self.previous_state = GroupState.EMPTY
        self.state_timestamp_ms = now_ms
        self.rebalance_started_ms: int | None = None
        """When the rebalance in progress (or the last one) left Stable or Empty; soft state, for metrics."""
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.generation_id = 0
        self.leader_id: str | None = None
        self.members: dict[str, Member] = {}
        self.static_members: dict[str, str] = {}
        self.pending_members: dict[str, None] = {}
        self.pending_sync_members: set[str] = set()
        self.new_member_added = False
        self.in_initial_delay = False
        self.subscribed_topics: frozenset[str] | None = None
        self._awaiting_join = 0
        self._protocol_support: Counter[str] = Counter()

    # --- state -------------------------------------------------------------------------------------------------
    def is_in(self, *states: GroupState) -> bool:
        """True when the group is in one of ``states``."""
        return self.state in states

    def transition_to(self, target: GroupState, now_ms: int) -> None:
        """Move to ``target``; raises :class:`IllegalStateTransition` when the table forbids it."""
        if not is_legal_transition(self.state, target):
            raise IllegalStateTransition(
                f"group {self.group_id!r}: {self.state.value} -> {target.value} is not a legal transition")
        self.previous_state = self.state
        self.state = target
        self.state_timestamp_ms = now_ms

    @property
    def can_rebalance(self) -> bool:
        """True when a rebalance may start now."""
        return can_rebalance(self.state)

    # --- members -----------------------------------------------------------------------------------------------
    def has(self, member_id: str) -> bool:
        """True when ``member_id`` is a (non-pending) member."""
        return member_id in self.members

    def get(self, member_id: str) -> Member:
        """The member ``member_id``; raises ``KeyError``."""
        return self.members[member_id]

    @property
    def size(self) -> int:
        """Number of members."""
        return len(self.members)

    def is_leader(self, member_id: str) -> bool:
        """True when ``member_id`` leads the group."""
        return self.leader_id == member_id

    def add(self, member: Member) -> None:
        """Add ``member``; the first member fixes the group's protocol type and becomes leader."""
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        self._count(member, +1)
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.pending_members.pop(member.member_id, None)

    def remove(self, member_id: str) -> Member | None:
        """Remove a member (if present); a removed leader is replaced by the oldest remaining member."""
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        self._count(member, -1)
        if member.group_instance_id is not None and self.static_members.get(member.group_instance_id) == member_id:
            del self.static_members[member.group_instance_id]
        self.pending_sync_members.discard(member_id)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def add_pending_member(self, member_id: str) -> None:
        """Remember a member id handed out with MEMBER_ID_REQUIRED."""
        self.pending_members[member_id] = None

    def is_pending_member(self, member_id: str) -> bool:
        """True for an id handed out with MEMBER_ID_REQUIRED that has not joined yet."""
        return member_id in self.pending_members

    def current_static_member_id(self, group_instance_id: str | None) -> str | None:
        """The member id currently holding ``group_instance_id``."""
        return None if group_instance_id is None else self.static_members.get(group_instance_id)

    def is_static_member_fenced(self, group_instance_id: str | None, member_id: str) -> bool:
        """True when ``group_instance_id`` is held by another member id (the caller is a zombie)."""
        current = self.current_static_member_id(group_instance_id)
        return current is not None and current != member_id

    def replace_static_member(self, group_instance_id: str, old_member_id: str, new_member_id: str) -> Member:
        """Give ``group_instance_id`` to ``new_member_id``, keeping the member's place, protocols and assignment.

        The old member's parked requests are left on the returned member's ``join_tokens``/``sync_tokens``
        for the caller to fence; the lists are replaced by empty ones.
        """
        member = self.members.pop(old_member_id)
        old = Member(member_id=old_member_id, group_instance_id=group_instance_id, client_id=member.client_id,
                     client_host=member.client_host, rebalance_timeout_ms=member.rebalance_timeout_ms,
                     session_timeout_ms=member.session_timeout_ms, protocol_type=member.protocol_type,
                     protocols=member.protocols, join_tokens=member.join_tokens, sync_tokens=member.sync_tokens)
        member.member_id = new_member_id
        if member.join_tokens:
            self._awaiting_join -= 1
        member.join_tokens = []
        member.sync_tokens = []
        self.members[new_member_id] = member
        self.static_members[group_instance_id] = new_member_id
        if self.leader_id == old_member_id:
            self.leader_id = new_member_id
        if old_member_id in self.pending_sync_members:
            self.pending_sync_members.discard(old_member_id)
            self.pending_sync_members.add(new_member_id)
        return old

    def update_protocols(self, member: Member, protocols: tuple[JoinGroupProtocol, ...]) -> None:
        """Give ``member`` (of this group) new ``protocols``."""
        self._count_protocols(member, -1)
        member.protocols = protocols
        self._count_protocols(member, +1)

    def _count(self, member: Member, sign: int) -> None:
        """Add (``sign`` +1) or take away (-1) ``member``'s share of the tallies."""
        if member.is_awaiting_join:
            self._awaiting_join += sign
        self._count_protocols(member, sign)

    def _count_protocols(self, member: Member, sign: int) -> None:
        for name in set(member.protocol_names):
            self._protocol_support[name] += sign
            if not self._protocol_support[name]:
                del self._protocol_support[name]

    # --- joining -----------------------------------------------------------------------------------------------
    @property
    def num_awaiting_join(self) -> int:
        """Members whose JoinGroup is parked."""
        return self._awaiting_join

    def park_join(self, member: Member, token: Token) -> None:
        """Park a JoinGroup of ``member`` (of this group) until the join phase completes."""
        if not member.join_tokens:
            self._awaiting_join += 1
        member.join_tokens.append(token)

    def take_join_tokens(self, member: Member) -> list[Token]:
        """The parked JoinGroups of ``member`` (of this group), which is no longer awaiting join afterwards."""
        tokens = member.join_tokens
        if tokens:
            self._awaiting_join -= 1
        member.join_tokens = []
        return tokens

    def has_all_members_joined(self) -> bool:
        """True when every member rejoined and no member id handed out is still to join."""
        return self.num_awaiting_join == len(self.members) and not self.pending_members

    def not_yet_rejoined(self) -> list[Member]:
        """Members that did not send JoinGroup in this rebalance."""
        return [m for m in self.members.values() if not m.is_awaiting_join]

    @property
    def rebalance_timeout_ms(self) -> int:
        """The largest rebalance timeout among the members (0 without members)."""
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def candidate_protocols(self) -> list[str]:
        """Protocols every member supports."""
        return candidate_protocols([m.protocol_names for m in self.members.values()])

    def supports_protocols(self, protocol_type: str, protocol_names: list[str], *, excluding: str | None = None
                           ) -> bool:
        """Whether a member with this protocol type and these protocols may join (``excluding`` its old self)."""
        excluded = self.members.get(excluding) if excluding is not None else None
        others = len(self.members) - (excluded is not None)
        if not others:
            return bool(protocol_type) and bool(protocol_names)
        if protocol_type != self.protocol_type:
            return False
        # A protocol every other member supports: its tally, less the excluded member's own vote, is ``others``.
        excluded_names = set(excluded.protocol_names) if excluded is not None else set()
        return any(self._protocol_support[name] - (name in excluded_names) == others for name in protocol_names)

    def select_protocol(self) -> str:
        """The protocol the members vote for."""
        return select_protocol([m.protocol_names for m in self.members.values()])

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else pick the first member that did; False when nobody rejoined."""
        if self.leader_id is not None and self.members[self.leader_id].is_awaiting_join:
            return True
        for member in self.members.values():
            if member.is_awaiting_join:
                self.leader_id = member.member_id
                return True
        return False

    def init_next_generation(self, now_ms: int) -> None:
        """Start the next generation: CompletingRebalance with members, else Empty."""
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.transition_to(GroupState.EMPTY, now_ms)
        self.subscribed_topics = self.compute_subscribed_topics()
        self.pending_sync_members = set()

    def current_member_metadata(self) -> tuple[JoinGroupMember, ...]:
        """Every member with its metadata for the selected protocol (what the leader receives)."""
        assert self.protocol_name is not None
        return tuple(JoinGroupMember(m.member_id, m.group_instance_id, m.metadata(self.protocol_name))
                     for m in self.members.values())

    # --- subscriptions -----------------------------------------------------------------------------------------
    def compute_subscribed_topics(self) -> frozenset[str] | None:
        """Topics the members of a ``consumer`` group subscribe to; ``None`` when unknown (other protocol types)."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return frozenset()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            decoded = decode_topics(member.metadata(self.protocol_name))
            if decoded is None:
                return None
            topics |= decoded
        return frozenset(topics)

    def is_subscribed_to_topic(self, topic: str) -> bool:
        """True when a member of a ``consumer`` group subscribes to ``topic``."""
        return self.subscribed_topics is not None and topic in self.subscribed_topics

    # --- persistence -------------------------------------------------------------------------------------------
    def to_metadata_value(self) -> GroupMetadataValue:
        """The group's current generation in its persisted form."""
        return GroupMetadataValue(
            protocol_type=self.protocol_type, generation_id=self.generation_id, protocol_name=self.protocol_name,
            leader_id=self.leader_id, state_timestamp_ms=self.state_timestamp_ms,
            members=tuple(m.to_value() for m in self.members.values()))

    @classmethod
    def from_metadata_value(cls, group_id: str, value: GroupMetadataValue) -> ClassicGroup:
        """A group rebuilt from its last completed generation: Stable with members, else Empty."""
        group = cls(group_id, now_ms=value.state_timestamp_ms)
        group.protocol_type = value.protocol_type
        group.generation_id = value.generation_id
        group.protocol_name = value.protocol_name
        for member_value in value.members:
            group.add(Member.from_value(member_value, value.protocol_type or ""))
        group.leader_id = value.leader_id
        if value.members:
            group.state = GroupState.STABLE
        group.subscribed_topics = group.compute_subscribed_topics()
        return group
