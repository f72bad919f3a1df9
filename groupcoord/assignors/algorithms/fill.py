"""Fill: hand free partitions to members' free slots, same rack first, in a fixed total order.

Each member has ``deficit`` free slots. With rack awareness, for each rack the k-th free partition (in (topic,
partition) order) with a replica in that rack is matched to the k-th slot of that rack's members (in member order,
a member's slots one after the other); a partition matched in several racks keeps the match of the first rack (by
name), and the other racks' slots it matched stay free. Then the remaining free partitions, in (topic, partition)
order, fill the remaining slots laid end to end in member order. No search: the result is fixed by the two orders.

Worked example: slots C0 x1 (rack a), C1 x2 (rack b); free t0p0 (racks b), t0p1 (racks a), t0p2 (no racks)::

    rack a: t0p1 -> C0        rack b: t0p0 -> C1        then: t0p2 -> C1
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from groupcoord.assignors.algorithms.group import Key, Partition


@dataclass(frozen=True)
class Slots:
    """``deficit`` free slots of a member (``rank`` orders members; ``rack`` may be None)."""

    member_id: str
    rank: int
    rack: str | None
    deficit: int


def fill(free: Sequence[Partition], slots: Sequence[Slots], *, rack_aware: bool) -> dict[Key, str]:
    """Assign ``free`` partitions to ``slots``; the deficits must add up to ``len(free)``. Returns key -> member."""
    ordered = sorted(slots, key=lambda s: s.rank)
    deficit = {s.member_id: s.deficit for s in ordered}
    remaining = sorted(free, key=lambda p: p.key)
    placed: dict[Key, str] = {}
    if rack_aware:
        rack_slots: dict[str, list[str]] = {}
        for s in ordered:
            if s.rack is not None and s.deficit > 0:
                rack_slots.setdefault(s.rack, []).extend([s.member_id] * s.deficit)
        matches: dict[Key, tuple[str, str]] = {}
        for rack, members in rack_slots.items():
            in_rack = [p for p in remaining if rack in p.racks]
            for partition, member in zip(in_rack, members, strict=False):
                if partition.key not in matches or rack < matches[partition.key][0]:
                    matches[partition.key] = (rack, member)
        for key, (_, member) in matches.items():
            placed[key] = member
            deficit[member] -= 1
        remaining = [p for p in remaining if p.key not in matches]
    position = 0
    for s in ordered:
        take = max(deficit[s.member_id], 0)
        for partition in remaining[position:position + take]:
            placed[partition.key] = s.member_id
        position += take
    last = next((s.member_id for s in reversed(ordered) if deficit[s.member_id] > 0), None)
    for partition in remaining[position:]:  # more partitions than slots: the plan gives them to the last member
        if last is not None:
            placed[partition.key] = last
    return placed
