"""A stand-in for the ConsumerGroupHeartbeat handler that the wiring step will write, so that scenarios can run a
group through several heartbeats with the real pieces: validation, the member lookup, leaving, a new target when
the group epoch moves, and reconciliation. It follows the steps of Kafka's ``consumerGroupHeartbeat`` and
``consumerGroupLeave``, without records: it changes the group directly.

The target assignment is a range assignment of one topic over the members sorted by id, so that each test knows
its target: with topic ``t`` of 4 partitions, one member gets 0-3; members ``a`` and ``b`` get 0-1 and 2-3.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from uuid import UUID

from groupcoord.coordinator.consumer_epochs import (
    LeaveKind,
    heartbeat_member,
    leave,
    throw_if_invalid_heartbeat,
)
from groupcoord.coordinator.consumer_reconciliation import maybe_reconcile
from groupcoord.group.consumer_group import ConsumerGroup
from groupcoord.group.consumer_member import (
    ConsumerGroupMember,
    OwnedPartitions,
    TopicPartitions,
    has_assigned_partitions_changed,
)
from groupcoord.protocol.requests import ConsumerGroupHeartbeatRequest

TOPIC = "t"
TOPIC_ID = UUID(int=1)
PARTITIONS = 4
ASSIGNORS = ("uniform", "range")


@dataclass(frozen=True)
class HeartbeatAnswer:
    """What the handler answers: the member id and epoch, and the assignment when Kafka sends it."""

    member_id: str
    member_epoch: int
    assignment: TopicPartitions | None


def range_target(member_ids: list[str]) -> dict[str, TopicPartitions]:
    """Topic ``t``'s partitions in contiguous ranges over ``member_ids`` sorted (the first ranges one longer)."""
    ordered = sorted(member_ids)
    target: dict[str, TopicPartitions] = {}
    start = 0
    for index, member_id in enumerate(ordered):
        count = PARTITIONS // len(ordered) + (1 if index < PARTITIONS % len(ordered) else 0)
        target[member_id] = {TOPIC_ID: frozenset(range(start, start + count))}
        start += count
    return target


class Scenario:
    """One consumer group and the heartbeats its members send."""

    def __init__(self, group_id: str = "g") -> None:
        self.group = ConsumerGroup(group_id)
        self.topic_ids: Mapping[str, UUID] = {TOPIC: TOPIC_ID}

    def join(self, member_id: str, *, instance_id: str | None = None) -> HeartbeatAnswer:
        """A member joins (epoch 0) subscribed to ``t``."""
        return self.heartbeat(ConsumerGroupHeartbeatRequest(
            group_id=self.group.group_id, member_id=member_id, member_epoch=0, instance_id=instance_id,
            rebalance_timeout_ms=30_000, subscribed_topic_names=(TOPIC,), topic_partitions={}))

    def beat(self, member_id: str, epoch: int, owned: OwnedPartitions | None,
             *, instance_id: str | None = None) -> HeartbeatAnswer:
        """A regular heartbeat at ``epoch`` reporting ``owned`` (``None``: not reported)."""
        return self.heartbeat(ConsumerGroupHeartbeatRequest(
            group_id=self.group.group_id, member_id=member_id, member_epoch=epoch, instance_id=instance_id,
            topic_partitions=owned))

    def heartbeat(self, request: ConsumerGroupHeartbeatRequest) -> HeartbeatAnswer:
        """Kafka's ``consumerGroupHeartbeat`` steps, applied to the group at once."""
        throw_if_invalid_heartbeat(request, supported_assignors=ASSIGNORS)
        group = self.group
        if request.is_leave:
            decision = leave(group, member_id=request.member_id, member_epoch=request.member_epoch,
                             instance_id=request.instance_id)
            if decision.kind is LeaveKind.TEMPORARY:
                group.update_member(decision.member)
            else:
                group.remove_member(decision.member.member_id)
                group.remove_target_assignment(decision.member.member_id)
                self._bump_and_assign()
            return HeartbeatAnswer(decision.response_member_id, decision.response_member_epoch, None)

        found = heartbeat_member(group, member_id=request.member_id, member_epoch=request.member_epoch,
                                 instance_id=request.instance_id, owned=request.topic_partitions)
        if found.replaced is not None:
            # Kafka's replaceMember: the new member id takes the old one's target; the group epoch stays.
            target = group.target_assignment_of(found.replaced.member_id)
            group.remove_member(found.replaced.member_id)
            group.remove_target_assignment(found.replaced.member_id)
            group.set_target_assignment(found.member.member_id, target)
        member = found.member
        updated = member.updated_from_heartbeat(
            instance_id=request.instance_id, rack_id=request.rack_id, rebalance_timeout_ms=request.rebalance_timeout_ms,
            subscribed_topic_names=request.subscribed_topic_names, server_assignor_name=request.server_assignor,
            client_id=request.client_id, client_host=request.client_host)
        subscription_changed = updated.subscribed_topic_names != member.subscribed_topic_names
        group.update_member(updated)
        if subscription_changed:
            self._bump_and_assign()
        reconciliation = maybe_reconcile(
            updated, target_epoch=group.target_assignment_epoch,
            target=group.target_assignment_of(updated.member_id), owned=request.topic_partitions,
            current_partition_epoch=group.current_partition_epoch,
            subscribed_topic_ids=[self.topic_ids[name] for name in updated.subscribed_topic_names])
        final = reconciliation.member
        group.update_member(final)
        sends_assignment = request.is_full or has_assigned_partitions_changed(member, final)
        return HeartbeatAnswer(final.member_id, final.member_epoch,
                               final.assigned_partitions if sends_assignment else None)

    def _bump_and_assign(self) -> None:
        group = self.group
        group.set_group_epoch(group.group_epoch + 1)
        if group.members:
            for member_id, partitions in range_target(list(group.members)).items():
                group.set_target_assignment(member_id, partitions)
        group.set_target_assignment_epoch(group.group_epoch)

    def member(self, member_id: str) -> ConsumerGroupMember:
        """The member ``member_id`` (it must exist)."""
        found = self.group.member(member_id)
        assert found is not None, f"{member_id} is not a member"
        return found


def parts(*partitions: int) -> TopicPartitions:
    """Partitions of topic ``t``."""
    return {TOPIC_ID: frozenset(partitions)}
