"""Replaying consumer-group records (KIP-848) into :class:`~groupcoord.group.consumer_group.ConsumerGroup`s, and
the records that rebuild a group from nothing (Kafka's ``GroupMetadataManager.replay`` for the consumer records).

All of a consumer group is hard state, as in Kafka: its epoch, its members, the target assignment and its epoch,
and each member's current assignment. Replay creates a group at its first record, as Kafka does; it forgives stale
tombstones (a group or member it does not know) and raises
:class:`~groupcoord.coordinator.hard_state.RecordInvariantError`'s cause, :class:`ConsumerReplayError`, on what a
correct coordinator never writes: a member removed before its assignment ended, a partition given to two members,
a group deleted while it still has members or a target.
"""

from __future__ import annotations

from dataclasses import replace

from groupcoord.coordinator.consumer_records import (
    ConsumerGroupMetadataRecord,
    ConsumerGroupRecord,
    ConsumerMemberMetadataRecord,
    CurrentAssignmentRecord,
    TargetAssignmentMemberRecord,
    TargetAssignmentMetadataRecord,
    new_consumer_group_epoch_record,
    new_current_assignment_record,
    new_member_metadata_record,
    new_target_epoch_record,
    new_target_member_record,
)
from groupcoord.group.consumer_group import ConsumerGroup
from groupcoord.group.consumer_member import (
    LEAVE_GROUP_MEMBER_EPOCH,
    ConsumerGroupMember,
    MemberState,
)
from groupcoord.group.metadata import GroupInvariantError


class ConsumerReplayError(ValueError):
    """A consumer-group record breaks an invariant of the group it applies to."""


def replay_consumer_record(groups: dict[str, ConsumerGroup], record: ConsumerGroupRecord) -> None:
    """Apply one consumer-group record to ``groups`` (the only writer of consumer-group state)."""
    if not record.group_id:
        raise ConsumerReplayError("consumer group record without a group id")
    if isinstance(record, ConsumerGroupMetadataRecord):
        _replay_epoch(groups, record)
    elif isinstance(record, TargetAssignmentMetadataRecord):
        _replay_target_epoch(groups, record)
    elif isinstance(record, TargetAssignmentMemberRecord):
        _replay_target_member(groups, record)
    elif isinstance(record, ConsumerMemberMetadataRecord):
        _replay_member_metadata(groups, record)
    else:
        _replay_current_assignment(groups, record)


def _group(groups: dict[str, ConsumerGroup], group_id: str) -> ConsumerGroup:
    group = groups.get(group_id)
    if group is None:
        group = groups[group_id] = ConsumerGroup(group_id)
    return group


def _replay_epoch(groups: dict[str, ConsumerGroup], record: ConsumerGroupMetadataRecord) -> None:
    if record.epoch is not None:
        _group(groups, record.group_id).set_group_epoch(record.epoch)
        return
    group = groups.get(record.group_id)
    if group is None:
        return
    if group.members or group.target_assignment:
        raise ConsumerReplayError(f"group {record.group_id}: deleted while it still has members or a target")
    del groups[record.group_id]


def _replay_target_epoch(groups: dict[str, ConsumerGroup], record: TargetAssignmentMetadataRecord) -> None:
    if record.assignment_epoch is not None:
        _group(groups, record.group_id).set_target_assignment_epoch(record.assignment_epoch)
        return
    group = groups.get(record.group_id)
    if group is None:
        return
    if group.target_assignment:
        raise ConsumerReplayError(f"group {record.group_id}: target epoch deleted before the target's members")
    group.set_target_assignment_epoch(0)


def _replay_target_member(groups: dict[str, ConsumerGroup], record: TargetAssignmentMemberRecord) -> None:
    if record.partitions is not None:
        _group(groups, record.group_id).set_target_assignment(
            record.member_id, {topic_id: frozenset(ids) for topic_id, ids in record.partitions})
        return
    group = groups.get(record.group_id)
    if group is not None:
        group.remove_target_assignment(record.member_id)


def _known_member(groups: dict[str, ConsumerGroup],
                  record: ConsumerMemberMetadataRecord | CurrentAssignmentRecord) -> tuple[ConsumerGroup,
                                                                                           ConsumerGroupMember] | None:
    """The group and member a tombstone names, or ``None`` when either is unknown (a stale tombstone)."""
    group = groups.get(record.group_id)
    member = None if group is None else group.member(record.member_id)
    return None if group is None or member is None else (group, member)


def _member_or_new(groups: dict[str, ConsumerGroup],
                   record: ConsumerMemberMetadataRecord | CurrentAssignmentRecord) -> tuple[ConsumerGroup,
                                                                                            ConsumerGroupMember]:
    """The group and member a record updates, each created at its first record."""
    group = _group(groups, record.group_id)
    return group, group.member(record.member_id) or ConsumerGroupMember(member_id=record.member_id)


def _replay_member_metadata(groups: dict[str, ConsumerGroup], record: ConsumerMemberMetadataRecord) -> None:
    if record.value is None:
        known = _known_member(groups, record)
        if known is None:
            return
        group, member = known
        if member.member_epoch != LEAVE_GROUP_MEMBER_EPOCH:
            raise ConsumerReplayError(
                f"group {record.group_id}: member {record.member_id} removed before its current assignment ended")
        group.remove_member(record.member_id)
        return
    group, member = _member_or_new(groups, record)
    value = record.value
    _update(group, replace(
        member, instance_id=value.instance_id, rack_id=value.rack_id, client_id=value.client_id,
        client_host=value.client_host, subscribed_topic_names=frozenset(value.subscribed_topic_names),
        subscribed_topic_regex=value.subscribed_topic_regex, server_assignor_name=value.server_assignor,
        rebalance_timeout_ms=value.rebalance_timeout_ms, classic=value.classic))


def _replay_current_assignment(groups: dict[str, ConsumerGroup], record: CurrentAssignmentRecord) -> None:
    if record.value is None:
        known = _known_member(groups, record)
        if known is None:
            return
        group, member = known
        _update(group, replace(member, member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                               previous_member_epoch=LEAVE_GROUP_MEMBER_EPOCH, state=MemberState.STABLE,
                               assigned_with_epochs={}, pending_revocation_with_epochs={}))
        return
    group, member = _member_or_new(groups, record)
    value = record.value
    _update(group, replace(
        member, member_epoch=value.member_epoch, previous_member_epoch=value.previous_member_epoch,
        state=value.member_state,
        assigned_with_epochs={topic_id: dict(pairs) for topic_id, pairs in value.assigned},
        pending_revocation_with_epochs={topic_id: dict(pairs) for topic_id, pairs in value.pending_revocation}))


def _update(group: ConsumerGroup, member: ConsumerGroupMember) -> None:
    try:
        group.update_member(member)
    except GroupInvariantError as exc:
        raise ConsumerReplayError(str(exc)) from None


def consumer_group_records(group: ConsumerGroup) -> list[ConsumerGroupRecord]:
    """Records that rebuild ``group`` from nothing: each member's metadata and current assignment, the target,
    then the two epochs (sorted, so equal groups give equal lists)."""
    records: list[ConsumerGroupRecord] = []
    for member_id in sorted(group.members):
        member = group.members[member_id]
        records.append(new_member_metadata_record(group.group_id, member))
        records.append(new_current_assignment_record(group.group_id, member))
    for member_id in sorted(group.target_assignment):
        records.append(new_target_member_record(group.group_id, member_id, group.target_assignment[member_id]))
    records.append(new_target_epoch_record(group.group_id, group.target_assignment_epoch))
    records.append(new_consumer_group_epoch_record(group.group_id, group.group_epoch))
    return records
