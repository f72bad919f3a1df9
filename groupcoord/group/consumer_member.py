"""A member of a consumer group (KIP-848, ``group.protocol=consumer``): its epochs, its reconciliation state, its
subscription and the partitions it owns (Kafka 4.4's ``ConsumerGroupMember`` and ``MemberState``).

A member is an immutable value: every change (a heartbeat's fields, a reconciliation step, a static member leaving
for a while) returns a new member, as Kafka's builder does. Partitions are named by topic id (``uuid.UUID``).

Since Kafka 4.3 (KIP-1251) a member keeps, for each partition it owns, the epoch at which it was assigned it, so that
an offset commit at an older member epoch can be judged partition by partition. The member therefore stores its
partitions *with* their assignment epochs (:data:`PartitionEpochs`); :attr:`ConsumerGroupMember.assigned_partitions`
and :attr:`ConsumerGroupMember.partitions_pending_revocation` give the plain sets (:data:`TopicPartitions`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from types import MappingProxyType
from uuid import UUID

from groupcoord.protocol.requests import (
    JOIN_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    JoinGroupProtocol,
)

__all__ = [
    "JOIN_GROUP_MEMBER_EPOCH",
    "LEAVE_GROUP_MEMBER_EPOCH",
    "LEAVE_GROUP_STATIC_MEMBER_EPOCH",
    "NO_PREVIOUS_MEMBER_EPOCH",
    "ClassicMemberMetadata",
    "ConsumerGroupMember",
    "MemberState",
    "OwnedPartitions",
    "PartitionEpochs",
    "TopicPartitions",
    "has_assigned_partitions_changed",
    "partition_epochs",
    "topic_partitions",
    "without_epochs",
]

TopicPartitions = Mapping[UUID, frozenset[int]]
"""Partitions by topic id. The values built here are read-only and hold no topic without partitions."""

PartitionEpochs = Mapping[UUID, Mapping[int, int]]
"""Partitions by topic id, each with the epoch at which the member was assigned it (KIP-1251)."""

OwnedPartitions = Mapping[UUID, Collection[int]]
"""The partitions a heartbeat reports the member owns, by topic id, as sent (a topic may come with none)."""

NO_PREVIOUS_MEMBER_EPOCH = -1
"""The previous epoch of a member that has never changed epoch (Kafka's builder default)."""

_EMPTY: Mapping[UUID, frozenset[int]] = MappingProxyType({})
_EMPTY_EPOCHS: Mapping[UUID, Mapping[int, int]] = MappingProxyType({})


def topic_partitions(partitions: Mapping[UUID, Iterable[int]]) -> TopicPartitions:
    """A read-only copy of ``partitions``, without the topics that have none."""
    frozen = {topic_id: frozenset(ids) for topic_id, ids in partitions.items()}
    return MappingProxyType({topic_id: ids for topic_id, ids in frozen.items() if ids})


def partition_epochs(partitions: Mapping[UUID, Iterable[int]], epoch: int) -> PartitionEpochs:
    """``partitions``, each assigned at ``epoch`` (read-only; topics without partitions dropped)."""
    return _freeze_epochs({topic_id: dict.fromkeys(ids, epoch) for topic_id, ids in partitions.items()})


def without_epochs(partitions: PartitionEpochs) -> TopicPartitions:
    """The partitions of ``partitions``, without their epochs."""
    return topic_partitions({topic_id: epochs.keys() for topic_id, epochs in partitions.items()})


def _freeze_epochs(partitions: Mapping[UUID, Mapping[int, int]]) -> PartitionEpochs:
    return MappingProxyType({
        topic_id: MappingProxyType(dict(epochs)) for topic_id, epochs in partitions.items() if epochs
    })


class MemberState(Enum):
    """Where a member is in its reconciliation; the value is the byte Kafka persists (``MemberState``).

    STABLE
        The member owns exactly its share of the target assignment at its epoch, or waits for a new target.
    UNREVOKED_PARTITIONS
        The member must first give up some partitions; it stays at its epoch until it reports them gone.
    UNRELEASED_PARTITIONS
        The member is at the target epoch but some of its target partitions are still owned by other members.
    UNKNOWN
        A state a newer coordinator wrote; the member is fenced and rejoins from scratch.
    """

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127

    @classmethod
    def from_value(cls, value: int) -> MemberState:
        """The state persisted as ``value``; an unknown value is ``UNKNOWN``, as in Kafka."""
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN


@dataclass(frozen=True, kw_only=True)
class ClassicMemberMetadata:
    """What a member that speaks the classic protocol (JoinGroup, SyncGroup, Heartbeat) inside a consumer group
    keeps besides a consumer member's fields (Kafka's ``ConsumerGroupMemberMetadataValue.ClassicMemberMetadata``):
    its session timeout and the protocols its last JoinGroup offered, in the client's order (each with its
    ConsumerProtocol subscription)."""

    session_timeout_ms: int
    protocols: tuple[JoinGroupProtocol, ...]

    @property
    def protocol_name(self) -> str:
        """The protocol the coordinator names in the member's JoinGroup and SyncGroup answers: its first."""
        return self.protocols[0].name


@dataclass(frozen=True, kw_only=True)
class ConsumerGroupMember:
    """One member of a consumer group, as Kafka's ``ConsumerGroupMember``.

    ``member_epoch`` is the epoch the member is at (-2 while a static member is away); ``previous_member_epoch``
    the one before its last move, accepted once more from a member whose response was lost.
    ``subscribed_topic_regex`` is ``""`` when the member has no regex (Kafka's default). ``rebalance_timeout_ms``
    is -1 until a join provides it. ``assigned_with_epochs`` and ``pending_revocation_with_epochs`` hold the
    partitions the member owns, each with the epoch it was assigned at. ``classic`` is set for a member that
    speaks the classic protocol (a classic group's member kept through an online upgrade, or a classic consumer
    joining a consumer group), ``None`` for a member of the consumer protocol.
    """

    member_id: str
    member_epoch: int = JOIN_GROUP_MEMBER_EPOCH
    previous_member_epoch: int = NO_PREVIOUS_MEMBER_EPOCH
    state: MemberState = MemberState.STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: frozenset[str] = frozenset()
    subscribed_topic_regex: str = ""
    server_assignor_name: str | None = None
    assigned_with_epochs: PartitionEpochs = field(default_factory=dict, hash=False)
    pending_revocation_with_epochs: PartitionEpochs = field(default_factory=dict, hash=False)
    classic: ClassicMemberMetadata | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "subscribed_topic_names", frozenset(self.subscribed_topic_names))
        object.__setattr__(self, "assigned_with_epochs", _freeze_epochs(self.assigned_with_epochs))
        object.__setattr__(
            self, "pending_revocation_with_epochs", _freeze_epochs(self.pending_revocation_with_epochs))

    @property
    def is_static(self) -> bool:
        """True for a member with a ``group.instance.id``."""
        return self.instance_id is not None

    @property
    def uses_classic_protocol(self) -> bool:
        """True for a member that speaks the classic protocol (Kafka's ``useClassicProtocol``)."""
        return self.classic is not None

    @property
    def assigned_partitions(self) -> TopicPartitions:
        """The partitions the member owns and keeps, by topic id."""
        return without_epochs(self.assigned_with_epochs)

    @property
    def partitions_pending_revocation(self) -> TopicPartitions:
        """The partitions the member still owns but must give up, by topic id."""
        return without_epochs(self.pending_revocation_with_epochs)

    def is_reconciled_to(self, target_assignment_epoch: int) -> bool:
        """True when the member is STABLE at ``target_assignment_epoch`` (Kafka's ``isReconciledTo``)."""
        return self.state is MemberState.STABLE and self.member_epoch == target_assignment_epoch

    def assignment_epoch(self, topic_id: UUID, partition: int) -> int | None:
        """The epoch at which the member was assigned this partition, if it keeps it; else ``None``."""
        return self.assigned_with_epochs.get(topic_id, {}).get(partition)

    def pending_revocation_epoch(self, topic_id: UUID, partition: int) -> int | None:
        """The epoch at which the member was assigned this partition, if it must give it up; else ``None``."""
        return self.pending_revocation_with_epochs.get(topic_id, {}).get(partition)

    def owns(self, topic_id: UUID, partition: int) -> bool:
        """True when the member holds the partition, assigned or pending revocation."""
        return (self.assignment_epoch(topic_id, partition) is not None
                or self.pending_revocation_epoch(topic_id, partition) is not None)

    def moved_to_epoch(self, member_epoch: int) -> ConsumerGroupMember:
        """This member at ``member_epoch``, its current epoch becoming the previous one (``updateMemberEpoch``)."""
        return replace(self, member_epoch=member_epoch, previous_member_epoch=self.member_epoch)

    def updated_from_heartbeat(
        self, *, instance_id: str | None = None, rack_id: str | None = None, rebalance_timeout_ms: int = -1,
        subscribed_topic_names: Iterable[str] | None = None, subscribed_topic_regex: str | None = None,
        server_assignor_name: str | None = None, client_id: str, client_host: str,
    ) -> ConsumerGroupMember:
        """This member with what a heartbeat carries: ``None`` (or -1 for the timeout) keeps the current value.

        The client id and host are always replaced, as Kafka's ``consumerGroupHeartbeat`` does, and the member
        speaks the consumer protocol from now on (no classic metadata).
        """
        return replace(
            self,
            instance_id=self.instance_id if instance_id is None else instance_id,
            rack_id=self.rack_id if rack_id is None else rack_id,
            rebalance_timeout_ms=self.rebalance_timeout_ms if rebalance_timeout_ms == -1 else rebalance_timeout_ms,
            subscribed_topic_names=(self.subscribed_topic_names if subscribed_topic_names is None
                                    else frozenset(subscribed_topic_names)),
            subscribed_topic_regex=(self.subscribed_topic_regex if subscribed_topic_regex is None
                                    else subscribed_topic_regex),
            server_assignor_name=self.server_assignor_name if server_assignor_name is None else server_assignor_name,
            client_id=client_id,
            client_host=client_host,
            classic=None,
        )

    def left_temporarily(self) -> ConsumerGroupMember:
        """A static member that left with epoch -2: it keeps its assignment, drops what it had still to revoke,
        and its partitions' assignment epochs become 0 (Kafka's ``consumerGroupStaticMemberGroupLeave``)."""
        return replace(
            self,
            member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
            pending_revocation_with_epochs=_EMPTY_EPOCHS,
            assigned_with_epochs=partition_epochs(self.assigned_partitions, 0),
        )

    def rejoined_as(self, member_id: str) -> ConsumerGroupMember:
        """The copy that replaces this static member when its instance rejoins as ``member_id``: same subscription
        and assignment, epoch and previous epoch 0 (Kafka's ``getOrMaybeSubscribeStaticConsumerGroupMember``)."""
        return replace(self, member_id=member_id, member_epoch=0, previous_member_epoch=0)


def has_assigned_partitions_changed(old: ConsumerGroupMember, new: ConsumerGroupMember) -> bool:
    """True when ``new`` keeps other partitions (or the same at other epochs) than ``old``.

    Kafka sends the assignment in a heartbeat response when this is true, or when the request was a full one
    (``hasAssignedPartitionsChanged``).
    """
    return old.assigned_with_epochs != new.assigned_with_epochs
