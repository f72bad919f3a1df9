"""A consumer group (KIP-848): group epoch, target assignment and its epoch, members, and who owns which partition
(Kafka 4.4's ``ConsumerGroup`` and ``ModernGroup``).

The group keeps books only; the handlers decide. Its state is not stored but derived from the books each time, as
Kafka's ``maybeUpdateGroupState`` derives it after every change:

Empty
    no members. Offsets may expire; the group may be deleted.
Assigning
    the group epoch is ahead of the target assignment epoch: a new target must be computed.
Reconciling
    the target is current, but some member is not yet STABLE at the target epoch.
Stable
    every member is STABLE at the target epoch.
Dead
    the group is being removed; never derived here, only reported by the runtime for a group that is gone.

The partition -> epoch map says, for every partition some member holds (assigned or pending revocation), the member
epoch of its holder; a partition nobody holds has epoch -1 (:data:`NO_OWNER_EPOCH`). Reconciliation reads it to know
whether a partition is still unreleased.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from enum import Enum
from types import MappingProxyType
from uuid import UUID

from groupcoord.group.consumer_member import (
    ConsumerGroupMember,
    PartitionEpochs,
    TopicPartitions,
    topic_partitions,
)
from groupcoord.group.metadata import GroupInvariantError

NO_OWNER_EPOCH = -1
"""The epoch of a partition that no member holds."""

_NO_PARTITIONS: TopicPartitions = MappingProxyType({})


class ConsumerGroupState(Enum):
    """A consumer group's state; the value is Kafka's name, as ListGroups and ConsumerGroupDescribe show it."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


class ConsumerGroup:
    """One consumer group as the coordinator keeps it in memory.

    Change it only through :meth:`update_member`, :meth:`remove_member`, :meth:`set_group_epoch`,
    :meth:`set_target_assignment_epoch`, :meth:`set_target_assignment`, :meth:`remove_target_assignment` and
    :meth:`set_subscription_metadata` (the later replay of the consumer-group records calls them), so that the
    derived books (static members, partition epochs, subscribed topics, server assignors) stay right.
    """

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self._group_epoch = 0
        self._target_assignment_epoch = 0
        self._members: dict[str, ConsumerGroupMember] = {}
        self._target_assignment: dict[str, TopicPartitions] = {}
        self._static_members: dict[str, str] = {}
        self._partition_epochs: dict[UUID, dict[int, int]] = {}
        self._subscribed_topic_names: Counter[str] = Counter()
        self._server_assignors: Counter[str] = Counter()
        self._subscription_metadata: Mapping[str, int] = MappingProxyType({})

    # --- epochs and state --------------------------------------------------------------------------------------

    @property
    def group_epoch(self) -> int:
        """The epoch of the group's membership and subscriptions; bumped when they change."""
        return self._group_epoch

    @property
    def target_assignment_epoch(self) -> int:
        """The group epoch that the current target assignment was computed for (Kafka's ``assignmentEpoch``)."""
        return self._target_assignment_epoch

    def set_group_epoch(self, epoch: int) -> None:
        """Record a new group epoch."""
        self._group_epoch = epoch

    def set_target_assignment_epoch(self, epoch: int) -> None:
        """Record the epoch of the current target assignment."""
        self._target_assignment_epoch = epoch

    @property
    def state(self) -> ConsumerGroupState:
        """Empty, Assigning, Reconciling or Stable, derived as Kafka's ``maybeUpdateGroupState`` does."""
        if not self._members:
            return ConsumerGroupState.EMPTY
        if self._group_epoch > self._target_assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if any(not m.is_reconciled_to(self._target_assignment_epoch) for m in self._members.values()):
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    # --- members -----------------------------------------------------------------------------------------------

    @property
    def members(self) -> Mapping[str, ConsumerGroupMember]:
        """The members by member id (read-only view)."""
        return MappingProxyType(self._members)

    @property
    def num_members(self) -> int:
        """How many members the group has."""
        return len(self._members)

    def has_member(self, member_id: str) -> bool:
        """True when ``member_id`` is a member."""
        return member_id in self._members

    def member(self, member_id: str) -> ConsumerGroupMember | None:
        """The member ``member_id``, or ``None``."""
        return self._members.get(member_id)

    def static_member_id(self, instance_id: str) -> str | None:
        """The member id that holds ``instance_id`` now, or ``None``."""
        return self._static_members.get(instance_id)

    def static_member(self, instance_id: str) -> ConsumerGroupMember | None:
        """The member that holds ``instance_id`` now, or ``None``."""
        member_id = self._static_members.get(instance_id)
        return None if member_id is None else self._members.get(member_id)

    def has_static_member(self, instance_id: str | None) -> bool:
        """True when some member holds ``instance_id``."""
        return instance_id is not None and instance_id in self._static_members

    def update_member(self, member: ConsumerGroupMember) -> None:
        """Add ``member`` or replace the member with its id, keeping the derived books right.

        Raises :class:`~groupcoord.group.metadata.GroupInvariantError`, and changes nothing, when the member would
        hold a partition that another member still holds (Kafka's "partition is still owned" check).
        """
        old = self._members.get(member.member_id)
        released = set(self._held_by(old)) if old is not None else set()
        claimed: set[tuple[UUID, int]] = set()
        for topic_id, partition in _partitions_of(member):
            holder = self.current_partition_epoch(topic_id, partition)
            if (topic_id, partition) in claimed or (holder != NO_OWNER_EPOCH and (topic_id, partition) not in released):
                raise GroupInvariantError(
                    f"group {self.group_id}: cannot set the epoch of {topic_id}-{partition} to {member.member_epoch} "
                    f"because the partition is still owned at epoch {holder}")
            claimed.add((topic_id, partition))
        for topic_id, partition in released:
            self._release(topic_id, partition)
        for topic_id, partition in claimed:
            self._partition_epochs.setdefault(topic_id, {})[partition] = member.member_epoch
        self._members[member.member_id] = member
        self._count(old, -1)
        self._count(member, +1)
        if member.instance_id is not None:
            self._static_members[member.instance_id] = member.member_id

    def remove_member(self, member_id: str) -> ConsumerGroupMember | None:
        """Remove the member ``member_id`` and release its partitions; returns it (``None`` if it was not here)."""
        old = self._members.pop(member_id, None)
        if old is None:
            return None
        for topic_id, partition in self._held_by(old):
            self._release(topic_id, partition)
        self._count(old, -1)
        if old.instance_id is not None and self._static_members.get(old.instance_id) == member_id:
            del self._static_members[old.instance_id]
        return old

    # --- target assignment -------------------------------------------------------------------------------------

    @property
    def target_assignment(self) -> Mapping[str, TopicPartitions]:
        """The target assignment by member id (read-only view)."""
        return MappingProxyType(self._target_assignment)

    def target_assignment_of(self, member_id: str) -> TopicPartitions:
        """The target partitions of ``member_id``; none when the target does not name it."""
        return self._target_assignment.get(member_id, _NO_PARTITIONS)

    def set_target_assignment(self, member_id: str, partitions: Mapping[UUID, frozenset[int]]) -> None:
        """Record the target partitions of ``member_id``."""
        self._target_assignment[member_id] = topic_partitions(partitions)

    def remove_target_assignment(self, member_id: str) -> None:
        """Drop ``member_id`` from the target assignment (nothing happens if it is not there)."""
        self._target_assignment.pop(member_id, None)

    # --- partitions and subscriptions --------------------------------------------------------------------------

    def current_partition_epoch(self, topic_id: UUID, partition: int) -> int:
        """The member epoch of the partition's holder, or :data:`NO_OWNER_EPOCH` when no member holds it."""
        return self._partition_epochs.get(topic_id, {}).get(partition, NO_OWNER_EPOCH)

    @property
    def subscription_metadata(self) -> Mapping[str, int]:
        """The partition count of every topic the group subscribes to, as the last target was computed with."""
        return self._subscription_metadata

    def set_subscription_metadata(self, partition_counts: Mapping[str, int]) -> None:
        """Record the partition count of each subscribed topic."""
        self._subscription_metadata = MappingProxyType(dict(partition_counts))

    @property
    def subscribed_topic_names(self) -> Mapping[str, int]:
        """How many members subscribe to each topic by name (regex subscriptions not included)."""
        return MappingProxyType(dict(self._subscribed_topic_names))

    def preferred_server_assignor(self) -> str | None:
        """The server assignor most members ask for, or ``None`` when none asks.

        Kafka takes the maximum of its counts in hash-map order; a tie goes here to the smallest name, so the
        choice does not depend on the order members joined in.
        """
        if not self._server_assignors:
            return None
        return min(self._server_assignors.items(), key=lambda item: (-item[1], item[0]))[0]

    # --- derived books -----------------------------------------------------------------------------------------

    def _held_by(self, member: ConsumerGroupMember) -> list[tuple[UUID, int]]:
        # Kafka only logs a partition of the member that is held at another epoch, and leaves it to its holder.
        return [(topic_id, partition) for topic_id, partition in _partitions_of(member)
                if self.current_partition_epoch(topic_id, partition) == member.member_epoch]

    def _release(self, topic_id: UUID, partition: int) -> None:
        epochs = self._partition_epochs.get(topic_id)
        if epochs is None:
            return
        epochs.pop(partition, None)
        if not epochs:
            del self._partition_epochs[topic_id]

    def _count(self, member: ConsumerGroupMember | None, delta: int) -> None:
        if member is None:
            return
        for name in member.subscribed_topic_names:
            self._subscribed_topic_names[name] += delta
        if member.server_assignor_name is not None:
            self._server_assignors[member.server_assignor_name] += delta
        self._subscribed_topic_names = +self._subscribed_topic_names
        self._server_assignors = +self._server_assignors


def _partitions_of(member: ConsumerGroupMember) -> list[tuple[UUID, int]]:
    """Every partition the member holds, assigned or pending revocation (a partition in both is listed twice)."""
    owned: list[PartitionEpochs] = [member.assigned_with_epochs, member.pending_revocation_with_epochs]
    return [(topic_id, partition) for held in owned for topic_id, epochs in held.items() for partition in epochs]
