"""The classic group aggregate: its five states and transition table, members, protocol selection, and the
persisted form of a completed generation."""

from __future__ import annotations

from groupcoord.group.group import SERVER_ASSIGNOR_PREFIX, ClassicGroup, is_server_side
from groupcoord.group.member import Member, Token
from groupcoord.group.metadata import GroupInvariantError, GroupMetadataValue, MemberMetadataValue
from groupcoord.group.selection import candidate_protocols, select_protocol
from groupcoord.group.state import (
    VALID_PREVIOUS_STATES,
    GroupState,
    IllegalStateTransition,
    can_rebalance,
    is_legal_transition,
    parse_state,
)

__all__ = [
    "SERVER_ASSIGNOR_PREFIX",
    "VALID_PREVIOUS_STATES",
    "ClassicGroup",
    "GroupInvariantError",
    "GroupMetadataValue",
    "GroupState",
    "IllegalStateTransition",
    "Member",
    "MemberMetadataValue",
    "Token",
    "can_rebalance",
    "candidate_protocols",
    "is_legal_transition",
    "is_server_side",
    "parse_state",
    "select_protocol",
]
