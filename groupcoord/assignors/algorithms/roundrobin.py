"""``roundrobin``: Kafka's ``RoundRobinAssignor``.

All partitions in (topic, partition) order are dealt to the members in member order, cyclically, skipping members
that do not subscribe to the partition's topic. Worked example: C0 and C1 subscribe to t0 and t1, three partitions
each::

    C0: [t0p0, t0p2, t1p1]
    C1: [t0p1, t1p0, t1p2]
"""

from __future__ import annotations

from groupcoord.assignors.algorithms.group import Group, Key


def assign_roundrobin(group: Group) -> dict[Key, str]:
    """Partition -> member."""
    members = [m.member_id for m in group.ranked]
    placed: dict[Key, str] = {}
    position = 0
    for partition in group.assignable:
        while partition.topic not in group.subscribed[members[position]]:
            position = (position + 1) % len(members)
        placed[partition.key] = members[position]
        position = (position + 1) % len(members)
    return placed
