"""Consumer groups' target assignments (KIP-848) as the assignors' input and output.

The core names topics by id; the assignors work on names. :func:`target_group` turns a ``NeedsTargetAssignment``
into the assignors' :class:`~groupcoord.assignors.algorithms.Group` (each member's subscribed topics that exist,
every partition of them, and the current target as the claims of the epoch before, which the sticky assignors keep);
:func:`target_answer` turns the output rows back into partitions by topic id per member.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING
from uuid import UUID

from groupcoord.assignment.weights import PartitionKey, weight_of
from groupcoord.coordinator.effects import CompleteTargetAssignment, NeedsTargetAssignment

if TYPE_CHECKING:
    from groupcoord.assignors.algorithms import Group
    from groupcoord.assignors.engine import Row

Racks = Callable[[str], Sequence[Sequence[str]] | None]
"""A topic's racks per partition (``None``: unknown)."""


def target_group(effect: NeedsTargetAssignment, weights: Mapping[PartitionKey, float],
                 racks: Racks | None = None) -> Group:
    """``effect``'s group as the assignors' input (see the module docs); members keep their racks."""
    from groupcoord.assignors.algorithms import Claim, Group, Member, Partition

    names = {topic.topic_id: topic.name for topic in effect.topics}
    known = set(names.values())
    members = tuple(
        Member(m.member_id, tuple(t for t in m.subscribed_topic_names if t in known), m.instance_id, m.rack_id)
        for m in effect.members)
    claims = tuple(
        Claim(m.member_id, names[topic_id], partition, effect.group_epoch - 1)
        for m in effect.members for topic_id, partitions in sorted(m.current_target.items()) if topic_id in names
        for partition in sorted(partitions))
    partitions: list[Partition] = []
    for topic in effect.topics:
        topic_racks = racks(topic.name) if racks is not None else None
        partitions.extend(
            Partition(topic.name, p, tuple(topic_racks[p]) if topic_racks else (),
                      weight_of(weights, effect.group_id, topic.name, p))
            for p in range(topic.partitions))
    return Group(members, tuple(partitions), claims, effect.group_id)


def target_answer(effect: NeedsTargetAssignment, rows: Sequence[Row]) -> CompleteTargetAssignment:
    """The output rows (``group_id, member_id, topic, partition``) of ``effect``'s group as each member's
    partitions by topic id; members without rows get nothing."""
    ids = {topic.name: topic.topic_id for topic in effect.topics}
    by_member: dict[str, dict[UUID, set[int]]] = defaultdict(lambda: defaultdict(set))
    for _, member_id, topic, partition in rows:
        by_member[member_id][ids[topic]].add(partition)
    assignment = {
        m.member_id: {topic_id: frozenset(ps) for topic_id, ps in by_member.get(m.member_id, {}).items()}
        for m in effect.members}
    return CompleteTargetAssignment(group_id=effect.group_id, group_epoch=effect.group_epoch, assignment=assignment)
