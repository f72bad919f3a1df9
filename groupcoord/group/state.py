"""The five states of a classic group and the transition table, kept as data (Kafka's ``GroupMetadata.scala``).

Each state lists the states it may be entered from (``VALID_PREVIOUS_STATES``); ``can_rebalance`` is derived from
the table rather than written by hand.

Empty
    action: answer JoinGroup (a member may join) and simple offset commits; expire offsets (KIP-211)
    transition: a member joins -> PreparingRebalance; all offsets expire or the group is deleted -> Dead
PreparingRebalance
    action: collect JoinGroup from every known member (responses are held until the join completes);
    heartbeats get REBALANCE_IN_PROGRESS; commits of the current generation are accepted
    transition: all members joined or the rebalance timeout fired -> CompletingRebalance; no member left -> Empty
CompletingRebalance
    action: hold SyncGroup until the leader's (or the server assignor's) assignment is persisted
    transition: assignment persisted -> Stable; a join, leave, expiry or assignment error -> PreparingRebalance
Stable
    action: answer SyncGroup with the member's assignment; heartbeats and commits are normal
    transition: a member joins, leaves, expires, or its subscription's topics change -> PreparingRebalance
Dead
    action: the group is gone; every request sees it as unknown
    transition: none (the group is removed)
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from types import MappingProxyType


class GroupState(Enum):
    """A classic group's state; the value is Kafka's state name as shown by DescribeGroups and ListGroups."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_S = GroupState

VALID_PREVIOUS_STATES: Mapping[GroupState, frozenset[GroupState]] = MappingProxyType({
    _S.EMPTY: frozenset({_S.PREPARING_REBALANCE}),
    _S.PREPARING_REBALANCE: frozenset({_S.STABLE, _S.COMPLETING_REBALANCE, _S.EMPTY}),
    _S.COMPLETING_REBALANCE: frozenset({_S.PREPARING_REBALANCE}),
    _S.STABLE: frozenset({_S.COMPLETING_REBALANCE}),
    _S.DEAD: frozenset({_S.STABLE, _S.PREPARING_REBALANCE, _S.COMPLETING_REBALANCE, _S.EMPTY, _S.DEAD}),
})
"""For each state, the states it may be entered from."""


class IllegalStateTransition(RuntimeError):
    """A transition the table does not allow: a bug in a handler, never a client error."""


def is_legal_transition(source: GroupState, target: GroupState) -> bool:
    """True when the table allows ``source -> target``."""
    return source in VALID_PREVIOUS_STATES[target]


def can_rebalance(state: GroupState) -> bool:
    """True when a rebalance may start from ``state`` (derived from the table)."""
    return is_legal_transition(state, GroupState.PREPARING_REBALANCE)


def parse_state(name: str) -> GroupState | None:
    """The state named ``name`` (case-insensitive, Kafka spelling), or ``None``."""
    for state in GroupState:
        if state.value.lower() == name.strip().lower():
            return state
    return None
