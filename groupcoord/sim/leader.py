"""The simulated group leader's assignment: the JoinGroup members as the assignors' input, the project's own
algorithm (:func:`groupcoord.assignors.algorithms.assign`: ``cooperative-sticky`` for cooperative members, ``sticky``
for eager ones), and its plan as each member's encoded Assignment.

A member's Subscription carries its topics, the partitions it owns (cooperative members only: eager ones revoke
everything before they join) and the generation it last synced in (v2+), which becomes the generation of its
claims: a stale claim loses to a newer one, as in Kafka's ``AbstractStickyAssignor``. A member with undecodable
metadata subscribes to nothing and claims nothing.

Example: topic t with 3 partitions, a (claims t0, t1, t2 in generation 1) and b joining, cooperative ->
a: t0, t1; b: nothing (cooperative-sticky withholds t2 while a revokes it); in the next generation b gets t2.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from kafka.structs import TopicPartition

from groupcoord.assignors.algorithms import Claim, Group, Key, Member, Partition, assign
from groupcoord.member.subscription import grouped
from groupcoord.protocol.consumer_protocol import (
    Assignment,
    ConsumerProtocolError,
    decode_subscription,
    encode_assignment,
)
from groupcoord.protocol.responses import JoinGroupMember

ASSIGNORS: Mapping[bool, str] = {False: "sticky", True: "cooperative-sticky"}
"""The assignor the leader runs, by whether the group is cooperative."""


def read_group(members: Sequence[JoinGroupMember], partition_counts: Mapping[str, int]) -> Group:
    """The leader's member list as the assignors' input: each member (with its ``group.instance.id``), every
    partition of the topics they subscribe to, and each member's owned partitions claimed in its generation."""
    read: list[Member] = []
    claims: list[Claim] = []
    for member in members:
        try:
            subscription = decode_subscription(member.metadata)
        except ConsumerProtocolError:
            read.append(Member(member.member_id, (), member.group_instance_id))
            continue
        read.append(Member(member.member_id, subscription.topics, member.group_instance_id))
        claims.extend(Claim(member.member_id, owned.topic, partition, subscription.generation_id)
                      for owned in subscription.owned_partitions for partition in owned.partitions)
    topics = sorted({topic for member in read for topic in member.topics})
    partitions = tuple(Partition(topic, p) for topic in topics for p in range(partition_counts.get(topic, 0)))
    return Group(members=tuple(read), partitions=partitions, claims=tuple(claims))


def subscribed_topics(group: Group) -> frozenset[str]:
    """Every topic some member of ``group`` subscribes to, whether or not it exists."""
    return frozenset(topic for member in group.members for topic in member.topics)


def plan(group: Group, *, cooperative: bool) -> dict[str, set[Key]]:
    """Each member's partitions for the next generation (a member given nothing maps to an empty set)."""
    result: dict[str, set[Key]] = {member.member_id: set() for member in group.members}
    for key, member_id in assign(group, ASSIGNORS[cooperative]).items():
        result[member_id].add(key)
    return result


def encode_plan(partitions_by_member: Mapping[str, Iterable[Key]]) -> dict[str, bytes]:
    """Each member's partitions as an encoded ConsumerProtocol Assignment (topics and partitions sorted)."""
    return {member_id: encode_assignment(Assignment(partitions=grouped(TopicPartition(t, p) for t, p in keys)))
            for member_id, keys in partitions_by_member.items()}


def assignments(members: Sequence[JoinGroupMember], partition_counts: Mapping[str, int], *,
                cooperative: bool) -> dict[str, bytes]:
    """What the leader sends in its SyncGroup: :func:`plan` of :func:`read_group`, encoded."""
    return encode_plan(plan(read_group(members, partition_counts), cooperative=cooperative))
