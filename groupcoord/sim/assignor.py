"""The simulated leader's assignor: small, deterministic and sticky, eager or cooperative (KIP-429).

Per topic, the members subscribed to it (sorted by id) get ``n // k`` or ``n // k + 1`` partitions. A member keeps
the partitions it reports as owned up to its quota; free partitions go to members below quota in id order.
In cooperative mode a partition that moves is *not* given to its new owner in this generation: the old owner
revokes it and rejoins, and the follow-up rebalance hands it over. Eager members report nothing as owned.

Example: topic t with 3 partitions, members a (owns t0, t1, t2) and b joining, cooperative ->
a: t0, t1; b: nothing (t2 is being revoked by a); in the next generation b gets t2.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from groupcoord.protocol.consumer_protocol import (
    Assignment,
    ConsumerProtocolError,
    TopicPartitions,
    decode_subscription,
    encode_assignment,
)
from groupcoord.protocol.responses import JoinGroupMember

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class MemberSubscription:
    """What the leader learns of one member from its JoinGroup metadata."""

    member_id: str
    topics: frozenset[str]
    owned: frozenset[TopicPartition]


def read_members(members: Sequence[JoinGroupMember]) -> list[MemberSubscription]:
    """Decode the leader's member list; a member with undecodable metadata subscribes to nothing."""
    out = []
    for member in members:
        try:
            sub = decode_subscription(member.metadata)
        except ConsumerProtocolError:
            out.append(MemberSubscription(member.member_id, frozenset(), frozenset()))
            continue
        owned = frozenset((tp.topic, p) for tp in sub.owned_partitions for p in tp.partitions)
        out.append(MemberSubscription(member.member_id, frozenset(sub.topics), owned))
    return out


def assign(members: Sequence[MemberSubscription], partition_counts: Mapping[str, int], *,
           cooperative: bool) -> dict[str, set[TopicPartition]]:
    """Each member's partitions for the next generation (see the module docstring)."""
    result: dict[str, set[TopicPartition]] = {m.member_id: set() for m in members}
    claimed: dict[TopicPartition, str] = {}
    for sub in sorted(members, key=lambda m: m.member_id):
        for tp in sorted(sub.owned):
            claimed.setdefault(tp, sub.member_id)  # a double claim: the lower id keeps it, the other revokes
    topics = sorted({t for m in members for t in m.topics if partition_counts.get(t, 0) > 0})
    for topic in topics:
        subscribers = sorted(m.member_id for m in members if topic in m.topics)
        count = partition_counts[topic]
        base, extra = divmod(count, len(subscribers))
        quota = {m: base + (1 if i < extra else 0) for i, m in enumerate(subscribers)}
        target: dict[str, list[int]] = {m: [] for m in subscribers}
        free = []
        for partition in range(count):
            owner = claimed.get((topic, partition))
            if owner in target and len(target[owner]) < quota[owner]:
                target[owner].append(partition)
            else:
                free.append(partition)
        for member in subscribers:
            while len(target[member]) < quota[member] and free:
                target[member].append(free.pop(0))
        for member, partitions in target.items():
            for partition in partitions:
                owner = claimed.get((topic, partition))
                if cooperative and owner is not None and owner != member:
                    continue  # still owned elsewhere: hand it over in the follow-up rebalance
                result[member].add((topic, partition))
    return result


def encode_partitions(partitions: set[TopicPartition]) -> bytes:
    """An Assignment of ``partitions``, topics and partitions sorted."""
    return encode_assignment(Assignment(partitions=grouped(partitions)))


def grouped(partitions: set[TopicPartition]) -> tuple[TopicPartitions, ...]:
    """``partitions`` grouped by topic, sorted (the wire form of owned and assigned partitions)."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        by_topic.setdefault(topic, []).append(partition)
    return tuple(TopicPartitions(t, tuple(ps)) for t, ps in by_topic.items())
