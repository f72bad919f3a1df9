"""The transition table: one test per legal transition and one per illegal transition."""

from __future__ import annotations

import itertools

import pytest

from groupcoord.group import VALID_PREVIOUS_STATES, ClassicGroup, GroupState, IllegalStateTransition, can_rebalance

PAIRS = list(itertools.product(GroupState, GroupState))
LEGAL = [(s, t) for s, t in PAIRS if s in VALID_PREVIOUS_STATES[t]]
ILLEGAL = [(s, t) for s, t in PAIRS if s not in VALID_PREVIOUS_STATES[t]]


def _group_in(state: GroupState) -> ClassicGroup:
    group = ClassicGroup("g", now_ms=0)
    group.state = state  # test set-up only: production code moves through transition_to
    return group


def test_table_matches_kafka() -> None:
    """Kafka's GroupMetadata.scala table, spelled out once."""
    s = GroupState
    assert set(LEGAL) == {
        (s.PREPARING_REBALANCE, s.EMPTY),
        (s.STABLE, s.PREPARING_REBALANCE), (s.COMPLETING_REBALANCE, s.PREPARING_REBALANCE),
        (s.EMPTY, s.PREPARING_REBALANCE),
        (s.PREPARING_REBALANCE, s.COMPLETING_REBALANCE),
        (s.COMPLETING_REBALANCE, s.STABLE),
        (s.STABLE, s.DEAD), (s.PREPARING_REBALANCE, s.DEAD), (s.COMPLETING_REBALANCE, s.DEAD),
        (s.EMPTY, s.DEAD), (s.DEAD, s.DEAD),
    }


@pytest.mark.parametrize(("source", "target"), LEGAL, ids=[f"{s.value}->{t.value}" for s, t in LEGAL])
def test_legal_transition(source: GroupState, target: GroupState) -> None:
    """A legal move changes the state and stamps the time."""
    group = _group_in(source)
    group.transition_to(target, 42)
    assert (group.previous_state, group.state, group.state_timestamp_ms) == (source, target, 42)


@pytest.mark.parametrize(("source", "target"), ILLEGAL, ids=[f"{s.value}->{t.value}" for s, t in ILLEGAL])
def test_illegal_transition(source: GroupState, target: GroupState) -> None:
    """An illegal move raises and leaves the group as it was."""
    group = _group_in(source)
    with pytest.raises(IllegalStateTransition):
        group.transition_to(target, 42)
    assert (group.state, group.state_timestamp_ms) == (source, 0)


@pytest.mark.parametrize("state", list(GroupState))
def test_can_rebalance_is_derived_from_the_table(state: GroupState) -> None:
    """Only Empty, Stable and CompletingRebalance may start a rebalance."""
    expected = state in {GroupState.EMPTY, GroupState.STABLE, GroupState.COMPLETING_REBALANCE}
    assert can_rebalance(state) is expected
