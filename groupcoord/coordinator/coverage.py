"""How a ``consumer`` group's current assignment covers the partitions of its topics, as the coordinator reads it
from the members' assignments (client-side assignors included): what decides whether a change of partition counts or
a static member's restart needs a rebalance."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from groupcoord.group.group import ClassicGroup
from groupcoord.protocol.consumer_protocol import PROTOCOL_TYPE as CONSUMER_PROTOCOL_TYPE
from groupcoord.protocol.consumer_protocol import ConsumerProtocolError, decode_assignment


def assigned_partitions(group: ClassicGroup) -> dict[str, set[int]] | None:
    """The partitions of each topic that a ``consumer`` group's current assignment gives out; ``None`` for another
    protocol type or an assignment that does not decode."""
    if group.protocol_type != CONSUMER_PROTOCOL_TYPE:
        return None
    assigned: dict[str, set[int]] = {}
    for member in group.members.values():
        try:
            partitions = decode_assignment(member.assignment).partitions
        except ConsumerProtocolError:
            return None
        for tp in partitions:
            assigned.setdefault(tp.topic, set()).update(tp.partitions)
    return assigned


def misses_partitions(group: ClassicGroup, partition_counts: Mapping[str, int]) -> bool:
    """True when a ``consumer`` group's assignment covers some partitions of a subscribed topic but not all that
    exist now (the topic grew since the assignment was made)."""
    assigned = assigned_partitions(group)
    if assigned is None or not group.subscribed_topics:
        return False
    return any(set(range(partition_counts.get(topic, 0))) - assigned[topic]
               for topic in assigned.keys() & group.subscribed_topics)


def leaves_partitions_unowned(group: ClassicGroup, partition_counts: Mapping[str, int]) -> bool:
    """True when a ``consumer`` group's assignment gives out no owner to some partition of a topic its members
    subscribe to. A cooperative assignor withholds a partition that moves for one round: the member that gives it up
    rejoins, and the next round assigns it."""
    assigned = assigned_partitions(group)
    if assigned is None or not group.subscribed_topics:
        return False
    return any(set(range(partition_counts.get(topic, 0))) - assigned.get(topic, set())
               for topic in group.subscribed_topics)


def assigns_exactly(group: ClassicGroup, topics: Iterable[str], partition_counts: Mapping[str, int]) -> bool:
    """True when a ``consumer`` group's assignment already gives out every partition of ``topics`` as counted now,
    and no other. A change that the coordinator's snapshot learns only after the assignment was made from it needs
    no rebalance: a query that copies a Kafka topic into the catalog just before it joins otherwise got a second,
    spurious rebalance a snapshot interval later, which its idle members had to poll to rejoin."""
    assigned = assigned_partitions(group)
    return assigned is not None and all(assigned.get(topic, set()) == set(range(partition_counts.get(topic, 0)))
                                        for topic in topics)
