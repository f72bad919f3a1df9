"""Property checks on collected assignments: validity, balance and stickiness as the issue defines them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

Partition = tuple[str, int]


def check_valid(assignment: Mapping[str, Sequence[Partition]], subs: Mapping[str, Sequence[str]],
                counts: Mapping[str, int]) -> None:
    """Members get only subscribed topics; every partition of a subscribed topic goes to exactly one member."""
    owners = Counter(tp for parts in assignment.values() for tp in parts)
    assert all(n == 1 for n in owners.values()), f"assigned twice: {[tp for tp, n in owners.items() if n > 1]}"
    for member, parts in assignment.items():
        assert all(t in subs[member] for t, _ in parts), f"{member} got an unsubscribed topic: {parts}"
    subscribed = {t for topics in subs.values() for t in topics if t in counts}
    expected = {(t, p) for t in subscribed for p in range(counts[t])}
    assert set(owners) == expected, f"missing {expected - set(owners)}, extra {set(owners) - expected}"


def check_balanced(assignment: Mapping[str, Sequence[Partition]], subs: Mapping[str, Sequence[str]]) -> None:
    """The issue's global definition: counts differ by at most one, or no assigned partition could move to a member
    with two or more fewer that subscribes to its topic (whatever the topic, for heterogeneous subscriptions too)."""
    load = {m: len(assignment.get(m, ())) for m in subs}
    if max(load.values(), default=0) - min(load.values(), default=0) <= 1:
        return
    for member, parts in assignment.items():
        for topic, partition in parts:
            for other, topics in subs.items():
                assert not (topic in topics and load[member] - load[other] > 1), (
                    f"{topic}-{partition} could move from {member} ({load[member]}) to {other} ({load[other]})"
                )


def check_sticky(assignment: Mapping[str, Sequence[Partition]], owned: Mapping[str, Sequence[Partition]],
                 subs: Mapping[str, Sequence[str]], counts: Mapping[str, int]) -> None:
    """Homogeneous case: every member keeps min(valid owned, its quota); the bigger quotas go to the bigger owners."""
    total = sum(counts[t] for t in {t for ts in subs.values() for t in ts if t in counts})
    members = sorted(subs)
    quota, extra = divmod(total, len(members))
    valid = {m: [tp for tp in owned.get(m, ()) if tp[0] in subs[m] and tp[1] < counts.get(tp[0], 0)] for m in members}
    by_owned = sorted(members, key=lambda m: -len(valid[m]))
    best = sum(min(len(valid[m]), quota + (1 if i < extra else 0)) for i, m in enumerate(by_owned))
    kept = sum(len(set(assignment.get(m, ())) & set(valid[m])) for m in members)
    assert kept == best, f"kept {kept} owned partitions, {best} were possible"


def check_keeps_all(assignment: Mapping[str, Sequence[Partition]], owned: Mapping[str, Sequence[Partition]]) -> None:
    """Every owned partition stays with its owner (when ``owned`` is a subset of a valid, balanced assignment,
    keeping all of it is possible, so the issue's stickiness requires it)."""
    lost = {(m, tp) for m, tps in owned.items() for tp in tps if tp not in set(assignment.get(m, ()))}
    assert not lost, f"owned partitions not kept: {sorted(lost)}"


def balance_by_moves(assignment: Mapping[str, Sequence[Partition]],
                     subs: Mapping[str, Sequence[str]]) -> dict[str, list[Partition]]:
    """A reference, independent of the assignors: move single partitions to a subscriber with two or more fewer
    until none can move (each move lowers the sum of squared counts, so this stops), i.e. until
    :func:`check_balanced` holds. Which partition moves where follows the input order, so random inputs give
    varied balanced assignments."""
    result = {m: list(assignment.get(m, ())) for m in subs}
    moved = True
    while moved:
        moved = False
        for parts in result.values():
            for tp in list(parts):
                taker = next((m for m in subs if tp[0] in subs[m] and len(result[m]) + 2 <= len(parts)), None)
                if taker is not None:
                    parts.remove(tp)
                    result[taker].append(tp)
                    moved = True
    return {m: sorted(parts) for m, parts in result.items() if parts}
