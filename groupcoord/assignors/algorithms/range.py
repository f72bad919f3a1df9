"""``range``: Kafka's ``RangeAssignor``, topic by topic.

For each topic, its subscribers in member order each take a contiguous run of its partitions; the first
``partitions % subscribers`` take one extra. With rack awareness (KIP-881), partitions with a replica in a member's
rack go to that member first, within the same per-member counts (:func:`~groupcoord.assignors.algorithms.fill.fill`).
Worked example: C0 and C1 both subscribe to t0 and t1, three partitions each::

    C0: [t0p0, t0p1, t1p0, t1p1]
    C1: [t0p2, t1p2]
"""

from __future__ import annotations

from groupcoord.assignors.algorithms.fill import Slots, fill
from groupcoord.assignors.algorithms.group import Group, Key, Partition


def assign_range(group: Group, *, rack_aware: bool = True) -> dict[Key, str]:
    """Partition -> member."""
    racks = {m.member_id: m.rack for m in group.members}
    placed: dict[Key, str] = {}
    by_topic: dict[str, list[Partition]] = {}
    for partition in group.assignable:
        by_topic.setdefault(partition.topic, []).append(partition)
    for topic, subscribers in group.subscribers.items():
        partitions = by_topic[topic]
        quota, extra = divmod(len(partitions), len(subscribers))
        slots = [Slots(m, i, racks[m], quota + (1 if i < extra else 0)) for i, m in enumerate(subscribers)]
        placed.update(fill(partitions, slots, rack_aware=rack_aware))
    return placed
