"""The Python algorithms on their own (no Spark): worked examples, global balance's exactness, and the properties
over many more random groups than the Spark property tests can afford."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.assignors.algorithms import Claim, Group, Member, Partition, assign
from groupcoord.assignors.algorithms.global_balance import globally_balanced, is_balanced
from tests.assignors.properties import check_balanced, check_keeps_all, check_sticky, check_valid
from tests.assignors.strategies import Case, cases, owning_balanced

Assignment = dict[str, list[tuple[str, int]]]
MANY = settings(max_examples=400, deadline=None)


def group_of(subs: Mapping[str, Sequence[str]], counts: Mapping[str, int],
             owned: Mapping[str, Sequence[tuple[str, int]]] | None = None, generation: int = 1,
             racks: Mapping[str, str] | None = None) -> Group:
    """A group from ``{member: topics}``, ``{topic: partitions}`` and ``{member: [(topic, partition)]}``."""
    return Group(
        tuple(Member(m, tuple(ts), rack=(racks or {}).get(m)) for m, ts in subs.items()),
        tuple(Partition(t, p) for t, n in counts.items() for p in range(n)),
        tuple(Claim(m, t, p, generation) for m, tps in (owned or {}).items() for t, p in tps),
    )


def by_member(placed: Mapping[tuple[str, int], str]) -> Assignment:
    """``{member: sorted [(topic, partition)]}``."""
    result: Assignment = {}
    for key, member in sorted(placed.items()):
        result.setdefault(member, []).append(key)
    return result


def run(name: str, case: Case, owned: Mapping[str, Sequence[tuple[str, int]]] | None = None,
        generation: int = 1) -> Assignment:
    owned = case.owned if owned is None else owned
    return by_member(assign(group_of(case.subs, case.counts, owned, generation), name))


def test_the_worked_examples() -> None:
    subs = {"C0": ["t0", "t1"], "C1": ["t0", "t1"]}
    assert by_member(assign(group_of(subs, {"t0": 3, "t1": 3}), "range")) == {
        "C0": [("t0", 0), ("t0", 1), ("t1", 0), ("t1", 1)], "C1": [("t0", 2), ("t1", 2)]}
    assert by_member(assign(group_of(subs, {"t0": 3, "t1": 3}), "roundrobin")) == {
        "C0": [("t0", 0), ("t0", 2), ("t1", 1)], "C1": [("t0", 1), ("t1", 0), ("t1", 2)]}
    sticky = group_of({"C0": ["t0"], "C1": ["t0"], "C2": ["t0"]}, {"t0": 4}, {"C0": [("t0", 0), ("t0", 1), ("t0", 2)]})
    assert by_member(assign(sticky, "sticky")) == {"C0": [("t0", 0), ("t0", 1)], "C1": [("t0", 2)], "C2": [("t0", 3)]}
    joined = group_of({"C0": ["t0"], "C1": ["t0"]}, {"t0": 2}, {"C0": [("t0", 0), ("t0", 1)]})
    assert by_member(assign(joined, "cooperative-sticky")) == {"C0": [("t0", 0)]}
    a_b = {"A": ["t1", "t2"], "B": ["t1"]}
    assert by_member(assign(group_of(a_b, {"t1": 2, "t2": 2}), "sticky")) == {
        "A": [("t2", 0), ("t2", 1)], "B": [("t1", 0), ("t1", 1)]}
    released = group_of(a_b, {"t1": 2, "t2": 2}, {"A": [("t1", 0), ("t1", 1), ("t2", 0)]})
    assert by_member(assign(released, "sticky")) == {"A": [("t2", 0), ("t2", 1)], "B": [("t1", 0), ("t1", 1)]}
    racked = Group((Member("C0", ("t0",), rack="a"), Member("C1", ("t0",), rack="b")),
                   (Partition("t0", 0, ("b",)), Partition("t0", 1, ("a",))),
                   (Claim("C0", "t0", 0, 1), Claim("C0", "t0", 1, 1)))
    assert by_member(assign(racked, "uniform")) == {"C0": [("t0", 1)], "C1": [("t0", 0)]}
    assert by_member(assign(racked, "sticky")) == {"C0": [("t0", 0)], "C1": [("t0", 1)]}  # stickiness first


def test_a_subset_needing_a_chain_of_moves_is_kept_whole() -> None:
    """The Spark rounds' counterexample (tests/assignors/test_heterogeneous.py): m0 5, m2 5, m1 4, m3 3 keeps all."""
    subs = {"m0": ["t0"], "m1": ["t1", "t2"], "m2": ["t0", "absent", "t1", "t2"], "m3": ["absent", "t1"]}
    counts = {"t0": 7, "t1": 6, "t2": 4}
    owned = {"m0": [("t0", 0), ("t0", 4), ("t0", 5), ("t0", 6)], "m1": [("t1", 1), ("t1", 2)],
             "m2": [("t0", 2), ("t2", 0), ("t2", 2), ("t2", 3)], "m3": [("t1", 4), ("t1", 5)]}
    for name in ("sticky", "uniform"):
        result = by_member(assign(group_of(subs, counts, owned), name))
        check_valid(result, subs, counts)
        check_balanced(result, subs)
        check_keeps_all(result, owned)


def _completions(group: Group) -> itertools.product[tuple[str, ...]] | None:
    """Every way to place the partitions nobody owns (None when there are too many to try)."""
    free = [p for p in group.assignable if p.key not in group.owned]
    choices = [group.subscribers[p.topic] for p in free]
    size = 1
    for options in choices:
        size *= len(options)
    return None if size > 20_000 else itertools.product(*choices)


@MANY
@given(case=cases(homogeneous=False, max_members=4, max_partitions=4))
def test_every_owned_partition_stays_whenever_some_balanced_assignment_keeps_them_all(case: Case) -> None:
    """Exactness, by brute force over every completion of the owned partitions."""
    group = group_of(case.subs, case.counts, case.owned)
    completions = _completions(group)
    if group.homogeneous or completions is None:
        return
    free = [p.key for p in group.assignable if p.key not in group.owned]
    possible = any(is_balanced({**group.owned, **dict(zip(free, choice, strict=True))}, group)
                   for choice in completions)
    placed = globally_balanced(group)
    assert is_balanced(placed, group)
    if possible:
        assert all(placed[key] == member for key, member in group.owned.items()), (group.owned, placed)


@MANY
@given(case=cases(homogeneous=False))
@pytest.mark.parametrize("name", ["sticky", "uniform", "range", "roundrobin"])
def test_heterogeneous_groups_are_valid_and_the_balanced_ones_balanced(name: str, case: Case) -> None:
    result = run(name, case)
    check_valid(result, case.subs, case.counts)
    if name in ("sticky", "uniform"):
        check_balanced(result, case.subs)


@MANY
@given(case=cases(homogeneous=True))
@pytest.mark.parametrize("name", ["sticky", "uniform"])
def test_homogeneous_groups_are_balanced_and_sticky(name: str, case: Case) -> None:
    result = run(name, case)
    check_valid(result, case.subs, case.counts)
    check_balanced(result, case.subs)
    check_sticky(result, case.owned, case.subs, case.counts)


@MANY
@given(case=owning_balanced(subset=False))
def test_a_balanced_owned_assignment_is_kept_unchanged(case: Case) -> None:
    for name in ("sticky", "uniform", "cooperative-sticky"):
        assert run(name, case) == case.owned


@MANY
@given(case=owning_balanced(subset=True))
def test_a_subset_of_a_balanced_assignment_is_kept_whole(case: Case) -> None:
    for name in ("sticky", "uniform"):
        result = run(name, case)
        check_valid(result, case.subs, case.counts)
        check_balanced(result, case.subs)
        check_keeps_all(result, case.owned)


@MANY
@given(case=st.one_of(cases(homogeneous=False), cases(homogeneous=True)))
def test_cooperative_sticky_converges_in_two_rounds(case: Case) -> None:
    round1 = run("cooperative-sticky", case)
    round2 = run("cooperative-sticky", case, owned=round1, generation=2)
    check_valid(round2, case.subs, case.counts)
    check_balanced(round2, case.subs)
    check_keeps_all(round2, round1)
