"""Scenarios of one consumer group driven through the core's real ConsumerGroupHeartbeat handler
(:meth:`~groupcoord.coordinator.coordinator.GroupCoordinator.consumer_group_heartbeat`), whose shell answers every
target assignment at once with :func:`range_target`. A heartbeat answered with an error raises it as
:class:`~groupcoord.protocol.errors.ProtocolError` (with Kafka's message), so a test reads like the handler's own
``throw_if_*`` checks.

(Until the handler existed, this module was a stand-in that applied the same steps to the group directly.)

The target assignment is a range assignment of one topic over the members sorted by id, so that each test knows
its target: with topic ``t`` of 4 partitions, one member gets 0-3; members ``a`` and ``b`` get 0-1 and 2-3.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from uuid import UUID

from groupcoord.coordinator import (
    CompleteTargetAssignment,
    CoordinatorConfig,
    GroupCoordinator,
    NeedsTargetAssignment,
)
from groupcoord.group.consumer_group import ConsumerGroup
from groupcoord.group.consumer_member import ConsumerGroupMember, OwnedPartitions, TopicPartitions
from groupcoord.protocol import ConsumerGroupHeartbeatResponse
from groupcoord.protocol.errors import ProtocolError
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
    """One consumer group and the heartbeats its members send, through the coordinator core."""

    def __init__(self, group_id: str = "g") -> None:
        self.group_id = group_id
        self.coordinator = GroupCoordinator(CoordinatorConfig(consumer_group_assignors=ASSIGNORS))
        self.topic_ids: Mapping[str, UUID] = {TOPIC: TOPIC_ID}
        self._tokens = itertools.count(1)
        self.coordinator.on_metadata_change({TOPIC: PARTITIONS}, 0, topic_ids=self.topic_ids)

    @property
    def group(self) -> ConsumerGroup:
        """The group as the coordinator holds it (an empty one before the first join). Read-only."""
        return self.coordinator.consumer_group(self.group_id) or ConsumerGroup(self.group_id)

    def join(self, member_id: str, *, instance_id: str | None = None) -> HeartbeatAnswer:
        """A member joins (epoch 0) subscribed to ``t``."""
        return self.heartbeat(ConsumerGroupHeartbeatRequest(
            group_id=self.group_id, member_id=member_id, member_epoch=0, instance_id=instance_id,
            rebalance_timeout_ms=30_000, subscribed_topic_names=(TOPIC,), topic_partitions={}))

    def beat(self, member_id: str, epoch: int, owned: OwnedPartitions | None,
             *, instance_id: str | None = None) -> HeartbeatAnswer:
        """A regular heartbeat at ``epoch`` reporting ``owned`` (``None``: not reported)."""
        return self.heartbeat(ConsumerGroupHeartbeatRequest(
            group_id=self.group_id, member_id=member_id, member_epoch=epoch, instance_id=instance_id,
            topic_partitions=owned))

    def heartbeat(self, request: ConsumerGroupHeartbeatRequest) -> HeartbeatAnswer:
        """Send ``request``; answer every target request with :func:`range_target`; raise an error answer."""
        token = next(self._tokens)
        result = self.coordinator.consumer_group_heartbeat(request, 0, token)
        effects = list(result.effects)
        response = result.response_for(token)
        while effects:
            effect = effects.pop(0)
            if isinstance(effect, NeedsTargetAssignment):
                answer = CompleteTargetAssignment(
                    group_id=effect.group_id, group_epoch=effect.group_epoch,
                    assignment=range_target([m.member_id for m in effect.members]))
                completed = self.coordinator.complete_target_assignment(answer, 0)
                effects.extend(completed.effects)
                response = response or completed.response_for(token)
        assert isinstance(response, ConsumerGroupHeartbeatResponse), f"no answer to {request}"
        if response.error.is_error:
            raise ProtocolError(response.error, response.error_message or "")
        assert response.member_id is not None
        return HeartbeatAnswer(response.member_id, response.member_epoch, response.assignment)

    def member(self, member_id: str) -> ConsumerGroupMember:
        """The member ``member_id`` (it must exist)."""
        found = self.group.member(member_id)
        assert found is not None, f"{member_id} is not a member"
        return found


def parts(*partitions: int) -> TopicPartitions:
    """Partitions of topic ``t``."""
    return {TOPIC_ID: frozenset(partitions)}
