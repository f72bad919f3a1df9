"""Hypothesis strategies for random groups, shared by the Spark property tests and the algorithm tests."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

from tests.assignors.properties import balance_by_moves


@dataclass(frozen=True)
class Case:
    """One random group: subscriptions, partition counts per topic and owned partitions per member."""

    subs: dict[str, list[str]]
    counts: dict[str, int]
    owned: dict[str, list[tuple[str, int]]]


@st.composite
def cases(draw: st.DrawFn, *, homogeneous: bool, max_members: int = 5, max_partitions: int = 7) -> Case:
    """A random group; every partition is owned by a random member or by nobody."""
    topics = [f"t{i}" for i in range(draw(st.integers(1, 3)))]
    counts = {t: draw(st.integers(1, max_partitions)) for t in topics}
    members = [f"m{i}" for i in range(draw(st.integers(1, max_members)))]
    if homogeneous:
        subs = {m: list(topics) for m in members}
    else:
        subs = {m: draw(st.lists(st.sampled_from([*topics, "absent"]), min_size=1, unique=True)) for m in members}
    owned: dict[str, list[tuple[str, int]]] = {m: [] for m in members}
    for t, n in counts.items():
        for p in range(n):
            holder = draw(st.sampled_from([None, *members]))
            if holder is not None:
                owned[holder].append((t, p))
    return Case(subs, counts, owned)


@st.composite
def owning_balanced(draw: st.DrawFn, *, subset: bool, max_members: int = 5, max_partitions: int = 7) -> Case:
    """A heterogeneous group whose owned partitions are a valid, globally balanced assignment (a random one, built
    in Python by :func:`balance_by_moves` from random holders), or a random subset of one."""
    case = draw(cases(homogeneous=False, max_members=max_members, max_partitions=max_partitions))
    holders: dict[str, list[tuple[str, int]]] = {m: [] for m in case.subs}
    for t, n in case.counts.items():
        subscribers = [m for m, topics in case.subs.items() if t in topics]
        for p in range(n):
            if subscribers:
                holders[draw(st.sampled_from(subscribers))].append((t, p))
    balanced = balance_by_moves(holders, case.subs)
    if subset:
        balanced = {m: [tp for tp in tps if draw(st.booleans())] for m, tps in balanced.items()}
    return Case(case.subs, case.counts, {m: tps for m, tps in balanced.items() if tps})
