"""The rules a consumer group (KIP-848) applies before anything changes, as Kafka 4.4 has them: ConsumerGroupHeartbeat
request validation, member epochs, who the heartbeat's member is (dynamic or static, joining or leaving), and the
member epoch of offset commits and fetches.

Every check raises :class:`~groupcoord.protocol.errors.ProtocolError` with Kafka's error and Kafka's message, so a
rejected request leaves the group as it was.

Member epochs in a heartbeat:

- ``0`` joins or rejoins (since Kafka 4.3, KAFKA-19233, also for a member the group still has, e.g. after it
  was fenced); ``-1`` leaves for good; ``-2`` is a static member leaving for a while, keeping its assignment.
- Otherwise the epoch must be the member's. A newer one is FENCED_MEMBER_EPOCH. An older one is accepted only
  when it is the member's previous epoch and the partitions the heartbeat reports are all assigned to the member
  (the response that moved it on may have been lost); any other is FENCED_MEMBER_EPOCH.

Offset commits (``ConsumerGroup.validateOffsetCommit``, with KIP-1251's per-partition check since Kafka 4.3): the
member's epoch commits anything; a newer epoch is STALE_MEMBER_EPOCH; an older epoch commits a partition only if the
member still holds it (assigned or pending revocation) and was assigned it at or before that epoch.

The request type, :class:`~groupcoord.protocol.requests.ConsumerGroupHeartbeatRequest`, and Kafka's error codes of
the consumer protocol live in :mod:`groupcoord.protocol`; this module re-exports both under the names it had.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from enum import Enum
from uuid import UUID

from groupcoord.group.consumer_group import ConsumerGroup
from groupcoord.group.consumer_member import (
    JOIN_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroupMember,
    OwnedPartitions,
    PartitionEpochs,
)
from groupcoord.protocol.errors import Errors, ProtocolError
from groupcoord.protocol.requests import CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION, ConsumerGroupHeartbeatRequest

# --- Kafka's codes of the consumer protocol (kept under these names for the modules and tests that use them) ------

FENCED_MEMBER_EPOCH = Errors.FENCED_MEMBER_EPOCH
"""A heartbeat's member epoch is neither the member's nor an acceptable previous one: rejoin from scratch."""
UNRELEASED_INSTANCE_ID = Errors.UNRELEASED_INSTANCE_ID
"""A static member joined with an instance id whose holder has not left with epoch -2."""
UNSUPPORTED_ASSIGNOR = Errors.UNSUPPORTED_ASSIGNOR
"""The heartbeat names a server assignor the coordinator does not have."""
STALE_MEMBER_EPOCH = Errors.STALE_MEMBER_EPOCH
"""An offset commit or fetch names an epoch the member is not at (or, for a commit, not allowed at)."""
INVALID_REGULAR_EXPRESSION = Errors.INVALID_REGULAR_EXPRESSION
"""A subscription regex that does not compile (RE2 syntax; checked by the regex step, not here)."""

FIRST_CONSUMER_PROTOCOL_COMMIT_VERSION = 9
"""The first OffsetCommit version a member of the consumer protocol may use (it carries the member epoch)."""


# --- request validation (Kafka's GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid) ----------

def throw_if_invalid_heartbeat(request: ConsumerGroupHeartbeatRequest, *, supported_assignors: Collection[str]) -> None:
    """INVALID_REQUEST or UNSUPPORTED_ASSIGNOR for a malformed heartbeat, with Kafka's messages, in Kafka's order.

    Kafka answers these before the request reaches the group, so they do not depend on the group's state.
    """
    epoch = request.member_epoch
    if (request.api_version >= CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION or epoch > 0
            or epoch == LEAVE_GROUP_MEMBER_EPOCH):
        _throw_if_blank(request.member_id, "MemberId can't be empty.")
    _throw_if_blank(request.group_id, "GroupId can't be empty.")
    _throw_if_blank(request.instance_id, "InstanceId can't be empty.")
    _throw_if_blank(request.rack_id, "RackId can't be empty.")
    if epoch == JOIN_GROUP_MEMBER_EPOCH:
        if request.rebalance_timeout_ms == -1:
            raise ProtocolError(Errors.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
        if request.topic_partitions is None or request.topic_partitions:
            raise ProtocolError(Errors.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining.")
        # A join with an empty list of names or an empty regex subscribes to nothing, but joins.
        if request.subscribed_topic_names is None and request.subscribed_topic_regex is None:
            raise ProtocolError(
                Errors.INVALID_REQUEST,
                "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
    elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if request.instance_id is None:
            raise ProtocolError(Errors.INVALID_REQUEST, "InstanceId can't be null.")
    elif epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise ProtocolError(Errors.INVALID_REQUEST, "MemberEpoch is invalid.")
    if request.server_assignor is not None and request.server_assignor not in supported_assignors:
        raise ProtocolError(
            UNSUPPORTED_ASSIGNOR,
            f"ServerAssignor {request.server_assignor} is not supported. "
            f"Supported assignors: {', '.join(supported_assignors)}.")


def _throw_if_blank(value: str | None, message: str) -> None:
    """Kafka's ``throwIfEmptyString``: a value that is set but blank (after trimming) is INVALID_REQUEST."""
    if value is not None and not value.strip():
        raise ProtocolError(Errors.INVALID_REQUEST, message)


# --- member epochs -----------------------------------------------------------------------------------------------

def throw_if_member_epoch_invalid(
    member: ConsumerGroupMember, received_epoch: int, owned: OwnedPartitions | None,
) -> None:
    """FENCED_MEMBER_EPOCH unless ``received_epoch`` may speak for ``member`` (Kafka's
    ``throwIfConsumerGroupMemberEpochIsInvalid``): epoch 0 (a rejoin), the member's epoch, or its previous epoch
    with owned partitions that are all assigned to it."""
    if received_epoch == JOIN_GROUP_MEMBER_EPOCH:
        return
    if received_epoch > member.member_epoch:
        raise ProtocolError(
            FENCED_MEMBER_EPOCH,
            f"The consumer group member has a greater member epoch ({received_epoch}) than the one known by the "
            f"group coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin.")
    if received_epoch < member.member_epoch and (
            received_epoch != member.previous_member_epoch or not is_subset(owned, member.assigned_with_epochs)):
        raise ProtocolError(
            FENCED_MEMBER_EPOCH,
            f"The consumer group member has a smaller member epoch ({received_epoch}) than the one known by the "
            f"group coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin.")


def is_subset(owned: OwnedPartitions | None, assigned: PartitionEpochs) -> bool:
    """True when every reported partition is assigned; not sending them (``None``) is never a subset, and a
    reported topic that is not assigned fails even with no partitions (Kafka's ``isSubset``)."""
    if owned is None:
        return False
    for topic_id, partitions in owned.items():
        epochs = assigned.get(topic_id)
        if epochs is None or any(partition not in epochs for partition in partitions):
            return False
    return True


# --- the group and the member a heartbeat speaks for ---------------------------------------------------------------

def throw_if_consumer_group_not_found(group: ConsumerGroup | None, group_id: str, member_epoch: int) -> None:
    """GROUP_ID_NOT_FOUND when the group does not exist and the heartbeat does not join (epoch 0 creates it)."""
    if group is None and member_epoch != JOIN_GROUP_MEMBER_EPOCH:
        raise ProtocolError(Errors.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")


def throw_if_group_full(group: ConsumerGroup, member_id: str, instance_id: str | None, max_size: int) -> None:
    """GROUP_MAX_SIZE_REACHED for a newcomer to a full group; a known member or instance may always come back."""
    if group.has_static_member(instance_id):
        return
    if group.num_members >= max_size and (not member_id or not group.has_member(member_id)):
        raise ProtocolError(
            Errors.GROUP_MAX_SIZE_REACHED,
            f"The consumer group has reached its maximum capacity of {max_size} members.")


def member_or_raise(group: ConsumerGroup, member_id: str) -> ConsumerGroupMember:
    """The member ``member_id``; UNKNOWN_MEMBER_ID if the group has none (Kafka's ``getOrMaybeCreateMember``)."""
    member = group.member(member_id)
    if member is None:
        raise ProtocolError(Errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group.group_id}.")
    return member


@dataclass(frozen=True)
class HeartbeatMember:
    """The member a heartbeat speaks for, before the heartbeat's fields are applied: an existing member, a new
    one, or the copy of a static member its rejoining instance replaces (``replaced``: remove it first)."""

    member: ConsumerGroupMember
    is_new: bool
    replaced: ConsumerGroupMember | None = None


def heartbeat_member(
    group: ConsumerGroup, *, member_id: str, member_epoch: int, instance_id: str | None,
    owned: OwnedPartitions | None,
) -> HeartbeatMember:
    """Who a (non-leaving) heartbeat speaks for, with Kafka's checks (``getOrMaybeSubscribe{Dynamic,Static}``).

    ``member_id`` is the request's, or a fresh one the coordinator made for a v0 join without one. A dynamic
    member joins with epoch 0 or must exist (UNKNOWN_MEMBER_ID). A static member joining with epoch 0 takes over
    its instance only once the previous holder left with epoch -2 (UNRELEASED_INSTANCE_ID otherwise), or at once
    from a holder of the classic protocol; with any
    other epoch its instance must be known (UNKNOWN_MEMBER_ID) and held by this member id (FENCED_INSTANCE_ID).
    Then the epoch must be valid for the member (:func:`throw_if_member_epoch_invalid`).
    """
    joining = member_epoch == JOIN_GROUP_MEMBER_EPOCH
    if instance_id is None:
        existing = group.member(member_id)
        if existing is None:
            if not joining:
                raise ProtocolError(
                    Errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group.group_id}.")
            return HeartbeatMember(ConsumerGroupMember(member_id=member_id), is_new=True)
        throw_if_member_epoch_invalid(existing, member_epoch, owned)
        return HeartbeatMember(existing, is_new=False)
    holder = group.static_member(instance_id)
    if joining:
        if holder is None:
            existing = group.member(member_id)
            return HeartbeatMember(existing or ConsumerGroupMember(member_id=member_id), is_new=existing is None)
        if not holder.uses_classic_protocol:  # a classic holder is replaced at once (a rolling upgrade)
            throw_if_instance_id_unreleased(holder, member_id, instance_id)
        return HeartbeatMember(holder.rejoined_as(member_id), is_new=True, replaced=holder)
    static = throw_if_static_member_unknown(holder, instance_id)
    throw_if_instance_id_fenced(static, member_id, instance_id)
    throw_if_member_epoch_invalid(static, member_epoch, owned)
    return HeartbeatMember(static, is_new=False)


def throw_if_instance_id_unreleased(holder: ConsumerGroupMember, member_id: str, instance_id: str) -> None:
    """UNRELEASED_INSTANCE_ID while the instance's holder has not left with epoch -2."""
    if holder.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise ProtocolError(
            UNRELEASED_INSTANCE_ID,
            f"Static member {member_id} with instance id {instance_id} cannot join the group because the instance "
            f"id is owned by {holder.member_id} member.")


def throw_if_static_member_unknown(holder: ConsumerGroupMember | None, instance_id: str) -> ConsumerGroupMember:
    """The instance's holder; UNKNOWN_MEMBER_ID when no member holds ``instance_id``."""
    if holder is None:
        raise ProtocolError(Errors.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
    return holder


def throw_if_instance_id_fenced(holder: ConsumerGroupMember, member_id: str, instance_id: str) -> None:
    """FENCED_INSTANCE_ID when another member id now holds the instance."""
    if holder.member_id != member_id:
        raise ProtocolError(
            Errors.FENCED_INSTANCE_ID,
            f"Static member {member_id} with instance id {instance_id} was fenced by member {holder.member_id}.")


class LeaveKind(Enum):
    """How a leaving heartbeat ends a membership (Kafka's ``consumerGroupLeave``)."""

    FENCE = "fence"
    """The member is removed; its partitions are free and the group epoch is bumped."""
    TEMPORARY = "temporary"
    """A static member left with epoch -2: it stays, at epoch -2, keeping its assignment."""


@dataclass(frozen=True)
class Leave:
    """What a leaving heartbeat does: ``member`` is the member as it is now (FENCE) or as it stays (TEMPORARY);
    the response carries ``response_member_id`` and ``response_member_epoch``."""

    kind: LeaveKind
    member: ConsumerGroupMember
    response_member_id: str
    response_member_epoch: int


def leave(group: ConsumerGroup, *, member_id: str, member_epoch: int, instance_id: str | None) -> Leave:
    """Resolve a heartbeat with epoch -1 or -2: UNKNOWN_MEMBER_ID for a stranger, UNKNOWN_MEMBER_ID or
    FENCED_INSTANCE_ID for a static member whose instance is unknown or held by another member id."""
    if instance_id is None:
        member = member_or_raise(group, member_id)
        return Leave(LeaveKind.FENCE, member, member_id, member_epoch)
    static = throw_if_static_member_unknown(group.static_member(instance_id), instance_id)
    throw_if_instance_id_fenced(static, member_id, instance_id)
    if member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        return Leave(LeaveKind.TEMPORARY, static.left_temporarily(), static.member_id,
                     LEAVE_GROUP_STATIC_MEMBER_EPOCH)
    return Leave(LeaveKind.FENCE, static, member_id, member_epoch)


# --- offset commits and fetches ------------------------------------------------------------------------------------

CommitPartitionValidator = Callable[[str, UUID, int], None]
"""Checks one partition of a commit, given its topic name, topic id and partition; raises to refuse it."""


def _accept_every_partition(topic: str, topic_id: UUID, partition: int) -> None:
    """The validator of a commit that needs no per-partition check."""


NO_PARTITION_CHECK: CommitPartitionValidator = _accept_every_partition
"""Kafka's ``CommitPartitionValidator.NO_OP``."""


def validate_offset_commit(
    group: ConsumerGroup, *, member_id: str, group_instance_id: str | None, member_epoch: int,
    is_transactional: bool, api_version: int,
) -> CommitPartitionValidator:
    """Kafka 4.4's ``ConsumerGroup.validateOffsetCommit`` for a member of the consumer protocol.

    Raises at once for the whole commit: UNKNOWN_MEMBER_ID for a stranger, UNSUPPORTED_VERSION for an OffsetCommit
    below v9 (from a member of the consumer protocol; a member of the classic protocol commits at any version, its
    generation being its member epoch), STALE_MEMBER_EPOCH for an epoch newer than the member's (ILLEGAL_GENERATION
    for a member of the classic protocol). Returns the check to run on each partition:
    none for the member's own epoch (or a commit without group management on an empty group, or a transactional
    commit without member), and for an older epoch :func:`assignment_epoch_validator`. Topic ids must be resolved
    by the caller, as Kafka's ``KafkaApis`` resolves names for OffsetCommit v9 and below.
    """
    if member_epoch < 0 and not group.members:
        return NO_PARTITION_CHECK
    if (is_transactional and member_epoch == -1 and member_id == "" and group_instance_id is None):
        return NO_PARTITION_CHECK
    member = member_or_raise(group, member_id)
    classic = member.uses_classic_protocol
    if not is_transactional and not classic and api_version < FIRST_CONSUMER_PROTOCOL_COMMIT_VERSION:
        raise ProtocolError(
            Errors.UNSUPPORTED_VERSION,
            "OffsetCommit version 9 or above must be used by members using the consumer group protocol")
    if member_epoch == member.member_epoch:
        return NO_PARTITION_CHECK
    if member_epoch > member.member_epoch and classic:
        raise ProtocolError(
            Errors.ILLEGAL_GENERATION,
            f"Received generation id {member_epoch} is newer than current member epoch {member.member_epoch}.")
    if member_epoch > member.member_epoch:
        raise ProtocolError(
            STALE_MEMBER_EPOCH,
            f"Received member epoch {member_epoch} is newer than current member epoch {member.member_epoch}.")
    return assignment_epoch_validator(member, member_epoch)


def assignment_epoch_validator(member: ConsumerGroupMember, received_epoch: int) -> CommitPartitionValidator:
    """KIP-1251's check of a commit at an older epoch: each partition must still be the member's (assigned, else
    pending revocation) and assigned at or before ``received_epoch``; otherwise STALE_MEMBER_EPOCH."""

    def validate(topic: str, topic_id: UUID, partition: int) -> None:
        assigned_at = member.assignment_epoch(topic_id, partition)
        if assigned_at is None:
            assigned_at = member.pending_revocation_epoch(topic_id, partition)
        if assigned_at is None:
            raise ProtocolError(
                STALE_MEMBER_EPOCH, f"Partition {topic}-{partition} is not assigned or pending revocation for member.")
        if received_epoch < assigned_at:
            raise ProtocolError(
                STALE_MEMBER_EPOCH,
                f"Received member epoch {received_epoch} is older than assignment epoch {assigned_at} for "
                f"partition {topic}-{partition}.")

    return validate


def validate_offset_fetch(group: ConsumerGroup, *, member_id: str | None, member_epoch: int) -> None:
    """Kafka's ``ConsumerGroup.validateOffsetFetch``: a fetch without member (no id, negative epoch) passes;
    otherwise UNKNOWN_MEMBER_ID for a stranger and STALE_MEMBER_EPOCH unless the epoch is exactly the member's."""
    if member_id is None and member_epoch < 0:
        return
    member = member_or_raise(group, member_id or "")
    if member_epoch != member.member_epoch:
        raise ProtocolError(
            STALE_MEMBER_EPOCH,
            f"The received member epoch {member_epoch} does not match the expected member epoch "
            f"{member.member_epoch}.")

