"""Client-side assignment for groups whose protocol is not ``server-*``: the leader runs kafka-python's assignor.

Seed 004: the leader gets every member's subscription in its JoinGroup response and returns everyone's assignment
in SyncGroup. kafka-python ships Kafka's range, roundrobin, sticky and cooperative-sticky assignors; this module
only adapts the member's view (partition counts, JoinGroup members) to their interface.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription

from groupcoord.protocol.responses import JoinGroupMember

LEADER_ASSIGNORS: Mapping[str, Any] = {
    "range": RangePartitionAssignor,
    "roundrobin": RoundRobinPartitionAssignor,
    "sticky": StickyPartitionAssignor,
    "cooperative-sticky": CooperativeStickyAssignor,
}
"""The client-side assignors a groupcoord member can run as leader, by protocol name."""


class UnknownAssignorError(ValueError):
    """The group selected a client-side protocol this member cannot run as leader."""


class _Cluster:
    """The two questions kafka-python's assignors ask of cluster metadata."""

    def __init__(self, partition_counts: Mapping[str, int]) -> None:
        self._counts = partition_counts

    def topics(self) -> set[str]:
        return set(self._counts)

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        count = self._counts.get(topic)
        return None if count is None else set(range(count))


@dataclass
class _Member:
    member_id: str
    group_instance_id: str | None
    metadata: Any


def assign_as_leader(protocol: str, members: Sequence[JoinGroupMember],
                     partition_counts: Mapping[str, int]) -> dict[str, bytes]:
    """Every member's encoded assignment computed with the assignor ``protocol``."""
    assignor_class = LEADER_ASSIGNORS.get(protocol)
    if assignor_class is None:
        raise UnknownAssignorError(f"this member cannot assign protocol {protocol!r} as leader; "
                                   f"known: {', '.join(sorted(LEADER_ASSIGNORS))} or server-<assignor>")
    decoded = [_Member(m.member_id, m.group_instance_id, ConsumerProtocolSubscription.decode(m.metadata))
               for m in members]
    assignments = assignor_class().assign(_Cluster(partition_counts), decoded)
    return {member_id: bytes(assignment.encode()) for member_id, assignment in assignments.items()}
