"""The records of consumer groups (KIP-848), as Kafka 4.4 keeps them in ``__consumer_offsets``, and their codec.

Five kinds, each a key and a value (``None`` is a tombstone), built only through the factories below:

- ``consumer_group_metadata`` (key: group): the group epoch;
- ``consumer_group_member_metadata`` (group, member): what the member sent: instance, rack, client, subscription,
  server assignor, rebalance timeout, and for a member of the classic protocol its session timeout and protocols
  (``classic_member_metadata``, absent for a member of the consumer protocol);
- ``consumer_group_target_assignment_member`` (group, member): the member's partitions in the target assignment;
- ``consumer_group_target_assignment_metadata`` (group): the epoch of the target assignment;
- ``consumer_group_current_member_assignment`` (group, member): the member's epochs, reconciliation state, and the
  partitions it owns (with the epoch each was assigned at).

Topics are named by id (a UUID string in JSON). Kafka's ``ConsumerGroupPartitionMetadata`` record is not kept: Kafka
4.x no longer writes it either (the subscription's metadata is derived from the metadata image).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from groupcoord.group.consumer_group import ConsumerGroup
from groupcoord.group.consumer_member import ClassicMemberMetadata, ConsumerGroupMember, MemberState
from groupcoord.protocol.requests import JoinGroupProtocol

CONSUMER_GROUP_METADATA_KIND = "consumer_group_metadata"
CONSUMER_GROUP_MEMBER_METADATA_KIND = "consumer_group_member_metadata"
CONSUMER_GROUP_TARGET_MEMBER_KIND = "consumer_group_target_assignment_member"
CONSUMER_GROUP_TARGET_METADATA_KIND = "consumer_group_target_assignment_metadata"
CONSUMER_GROUP_CURRENT_ASSIGNMENT_KIND = "consumer_group_current_member_assignment"

CONSUMER_GROUP_KINDS = frozenset({
    CONSUMER_GROUP_METADATA_KIND, CONSUMER_GROUP_MEMBER_METADATA_KIND, CONSUMER_GROUP_TARGET_MEMBER_KIND,
    CONSUMER_GROUP_TARGET_METADATA_KIND, CONSUMER_GROUP_CURRENT_ASSIGNMENT_KIND,
})
"""Every record kind of a consumer group."""

Partitions = tuple[tuple[UUID, tuple[int, ...]], ...]
"""Partitions by topic id, sorted: a comparable, hashable form of a target assignment."""

PartitionsWithEpochs = tuple[tuple[UUID, tuple[tuple[int, int], ...]], ...]
"""Partitions by topic id, each with the epoch it was assigned at, sorted."""


def sorted_partitions(partitions: Mapping[UUID, Iterable[int]]) -> Partitions:
    """``partitions`` in the records' sorted form, without topics that have none."""
    return tuple((topic_id, tuple(sorted(ids))) for topic_id, ids in sorted(partitions.items()) if ids)


def sorted_epochs(partitions: Mapping[UUID, Mapping[int, int]]) -> PartitionsWithEpochs:
    """``partitions`` with their epochs in the records' sorted form, without topics that have none."""
    return tuple((topic_id, tuple(sorted(epochs.items()))) for topic_id, epochs in sorted(partitions.items())
                 if epochs)


@dataclass(frozen=True, kw_only=True)
class ConsumerMemberMetadataValue:
    """What a member's heartbeats told the coordinator (Kafka's ``ConsumerGroupMemberMetadataValue``)."""

    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str
    server_assignor: str | None
    rebalance_timeout_ms: int
    classic: ClassicMemberMetadata | None = None

    @classmethod
    def of(cls, member: ConsumerGroupMember) -> ConsumerMemberMetadataValue:
        """The metadata part of ``member``."""
        return cls(instance_id=member.instance_id, rack_id=member.rack_id, client_id=member.client_id,
                   client_host=member.client_host, subscribed_topic_names=tuple(sorted(member.subscribed_topic_names)),
                   subscribed_topic_regex=member.subscribed_topic_regex, server_assignor=member.server_assignor_name,
                   rebalance_timeout_ms=member.rebalance_timeout_ms, classic=member.classic)


@dataclass(frozen=True, kw_only=True)
class CurrentAssignmentValue:
    """A member's epochs, reconciliation state and owned partitions (Kafka's
    ``ConsumerGroupCurrentMemberAssignmentValue``, with KIP-1251's assignment epochs)."""

    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned: PartitionsWithEpochs
    pending_revocation: PartitionsWithEpochs

    @classmethod
    def of(cls, member: ConsumerGroupMember) -> CurrentAssignmentValue:
        """The assignment part of ``member``."""
        return cls(member_epoch=member.member_epoch, previous_member_epoch=member.previous_member_epoch,
                   state=member.state.value, assigned=sorted_epochs(member.assigned_with_epochs),
                   pending_revocation=sorted_epochs(member.pending_revocation_with_epochs))

    @property
    def member_state(self) -> MemberState:
        """The reconciliation state (UNKNOWN for a value a newer coordinator wrote)."""
        return MemberState.from_value(self.state)


@dataclass(frozen=True)
class ConsumerGroupMetadataRecord:
    """A consumer group's epoch (``epoch``), or the group's deletion (``epoch is None``)."""

    group_id: str
    epoch: int | None


@dataclass(frozen=True)
class ConsumerMemberMetadataRecord:
    """A member's metadata (``value``), or the member's removal (``value is None``)."""

    group_id: str
    member_id: str
    value: ConsumerMemberMetadataValue | None


@dataclass(frozen=True)
class TargetAssignmentMemberRecord:
    """A member's partitions in the target assignment, or its removal from the target (``partitions is None``)."""

    group_id: str
    member_id: str
    partitions: Partitions | None


@dataclass(frozen=True)
class TargetAssignmentMetadataRecord:
    """The epoch of the group's target assignment, or its deletion with the group (``assignment_epoch is None``)."""

    group_id: str
    assignment_epoch: int | None


@dataclass(frozen=True)
class CurrentAssignmentRecord:
    """A member's current assignment (``value``), or its end when the member leaves (``value is None``)."""

    group_id: str
    member_id: str
    value: CurrentAssignmentValue | None


ConsumerGroupRecord = (
    ConsumerGroupMetadataRecord | ConsumerMemberMetadataRecord | TargetAssignmentMemberRecord
    | TargetAssignmentMetadataRecord | CurrentAssignmentRecord
)
"""Any record of a consumer group."""


# --- factories (the only place these records are built) ----------------------------------------------------------

def new_consumer_group_epoch_record(group_id: str, epoch: int) -> ConsumerGroupMetadataRecord:
    """The record of ``group_id``'s new group epoch."""
    return ConsumerGroupMetadataRecord(group_id, epoch)


def new_consumer_group_epoch_tombstone(group_id: str) -> ConsumerGroupMetadataRecord:
    """The record deleting the consumer group ``group_id`` (written last, once its members are gone)."""
    return ConsumerGroupMetadataRecord(group_id, None)


def new_member_metadata_record(group_id: str, member: ConsumerGroupMember) -> ConsumerMemberMetadataRecord:
    """The record of ``member``'s metadata."""
    return ConsumerMemberMetadataRecord(group_id, member.member_id, ConsumerMemberMetadataValue.of(member))


def new_member_metadata_tombstone(group_id: str, member_id: str) -> ConsumerMemberMetadataRecord:
    """The record removing ``member_id`` (after its current-assignment tombstone)."""
    return ConsumerMemberMetadataRecord(group_id, member_id, None)


def new_target_member_record(
    group_id: str, member_id: str, partitions: Mapping[UUID, Iterable[int]],
) -> TargetAssignmentMemberRecord:
    """The record of ``member_id``'s target partitions."""
    return TargetAssignmentMemberRecord(group_id, member_id, sorted_partitions(partitions))


def new_target_member_tombstone(group_id: str, member_id: str) -> TargetAssignmentMemberRecord:
    """The record removing ``member_id`` from the target assignment."""
    return TargetAssignmentMemberRecord(group_id, member_id, None)


def new_target_epoch_record(group_id: str, assignment_epoch: int) -> TargetAssignmentMetadataRecord:
    """The record of the target assignment's epoch (written after the target's member records)."""
    return TargetAssignmentMetadataRecord(group_id, assignment_epoch)


def new_target_epoch_tombstone(group_id: str) -> TargetAssignmentMetadataRecord:
    """The record deleting the target assignment's epoch with the group."""
    return TargetAssignmentMetadataRecord(group_id, None)


def new_current_assignment_record(group_id: str, member: ConsumerGroupMember) -> CurrentAssignmentRecord:
    """The record of ``member``'s epochs, state and owned partitions."""
    return CurrentAssignmentRecord(group_id, member.member_id, CurrentAssignmentValue.of(member))


def new_current_assignment_tombstone(group_id: str, member_id: str) -> CurrentAssignmentRecord:
    """The record ending ``member_id``'s assignment: its partitions are free (written first when it leaves)."""
    return CurrentAssignmentRecord(group_id, member_id, None)


def member_tombstones(group: ConsumerGroup, member_id: str) -> list[ConsumerGroupRecord]:
    """A leaving member's tombstones in Kafka's order: its current assignment (its partitions are free), its target
    (when it has one), its metadata."""
    records: list[ConsumerGroupRecord] = [new_current_assignment_tombstone(group.group_id, member_id)]
    if member_id in group.target_assignment:
        records.append(new_target_member_tombstone(group.group_id, member_id))
    records.append(new_member_metadata_tombstone(group.group_id, member_id))
    return records


# --- codec ---------------------------------------------------------------------------------------------------------

def _partitions_to_json(partitions: Partitions) -> list[list[Any]]:
    return [[str(topic_id), list(ids)] for topic_id, ids in partitions]


def _partitions_from_json(data: list[list[Any]]) -> Partitions:
    return sorted_partitions({UUID(str(topic_id)): [int(p) for p in ids] for topic_id, ids in data})


def _epochs_to_json(partitions: PartitionsWithEpochs) -> list[list[Any]]:
    return [[str(topic_id), [list(pair) for pair in pairs]] for topic_id, pairs in partitions]


def _epochs_from_json(data: list[list[Any]]) -> PartitionsWithEpochs:
    return sorted_epochs({UUID(str(topic_id)): {int(p): int(e) for p, e in pairs} for topic_id, pairs in data})


def _classic_to_json(classic: ClassicMemberMetadata) -> dict[str, Any]:
    return {"session_timeout_ms": classic.session_timeout_ms,
            "protocols": [[p.name, base64.b64encode(p.metadata).decode("ascii")] for p in classic.protocols]}


def _classic_from_json(data: dict[str, Any] | None) -> ClassicMemberMetadata | None:
    if data is None:
        return None
    return ClassicMemberMetadata(
        session_timeout_ms=int(data["session_timeout_ms"]),
        protocols=tuple(JoinGroupProtocol(str(name), base64.b64decode(str(metadata)))
                        for name, metadata in data["protocols"]))


def member_key(group_id: str, member_id: str) -> str:
    """The compaction key of a member's records."""
    return json.dumps([group_id, member_id], separators=(",", ":"))


def consumer_record_key(record: ConsumerGroupRecord) -> tuple[str, str]:
    """The kind and compaction key of ``record``."""
    if isinstance(record, ConsumerGroupMetadataRecord):
        return CONSUMER_GROUP_METADATA_KIND, record.group_id
    if isinstance(record, TargetAssignmentMetadataRecord):
        return CONSUMER_GROUP_TARGET_METADATA_KIND, record.group_id
    if isinstance(record, ConsumerMemberMetadataRecord):
        return CONSUMER_GROUP_MEMBER_METADATA_KIND, member_key(record.group_id, record.member_id)
    if isinstance(record, TargetAssignmentMemberRecord):
        return CONSUMER_GROUP_TARGET_MEMBER_KIND, member_key(record.group_id, record.member_id)
    return CONSUMER_GROUP_CURRENT_ASSIGNMENT_KIND, member_key(record.group_id, record.member_id)


def consumer_record_payload(record: ConsumerGroupRecord) -> dict[str, Any] | None:
    """The JSON payload of ``record``'s value, ``None`` for a tombstone."""
    if isinstance(record, ConsumerGroupMetadataRecord):
        return None if record.epoch is None else {"epoch": record.epoch}
    if isinstance(record, TargetAssignmentMetadataRecord):
        return None if record.assignment_epoch is None else {"assignment_epoch": record.assignment_epoch}
    if isinstance(record, TargetAssignmentMemberRecord):
        return None if record.partitions is None else {"partitions": _partitions_to_json(record.partitions)}
    if isinstance(record, ConsumerMemberMetadataRecord):
        if record.value is None:
            return None
        value = record.value
        return {"instance_id": value.instance_id, "rack_id": value.rack_id, "client_id": value.client_id,
                "client_host": value.client_host, "subscribed_topic_names": list(value.subscribed_topic_names),
                "subscribed_topic_regex": value.subscribed_topic_regex, "server_assignor": value.server_assignor,
                "rebalance_timeout_ms": value.rebalance_timeout_ms,
                **({} if value.classic is None else {"classic_member_metadata": _classic_to_json(value.classic)})}
    if record.value is None:
        return None
    current = record.value
    return {"member_epoch": current.member_epoch, "previous_member_epoch": current.previous_member_epoch,
            "state": current.state, "assigned": _epochs_to_json(current.assigned),
            "pending_revocation": _epochs_to_json(current.pending_revocation)}


def decode_consumer_record(kind: str, key: str, payload: dict[str, Any] | None) -> ConsumerGroupRecord:
    """The record of ``kind`` stored under ``key`` with ``payload`` (raises ``ValueError``/``KeyError`` when
    malformed; the caller turns those into its format error)."""
    if kind == CONSUMER_GROUP_METADATA_KIND:
        return ConsumerGroupMetadataRecord(key, None if payload is None else int(payload["epoch"]))
    if kind == CONSUMER_GROUP_TARGET_METADATA_KIND:
        return TargetAssignmentMetadataRecord(key, None if payload is None else int(payload["assignment_epoch"]))
    group_id, member_id = (str(part) for part in json.loads(key))
    if kind == CONSUMER_GROUP_TARGET_MEMBER_KIND:
        return TargetAssignmentMemberRecord(
            group_id, member_id, None if payload is None else _partitions_from_json(payload["partitions"]))
    if kind == CONSUMER_GROUP_MEMBER_METADATA_KIND:
        if payload is None:
            return ConsumerMemberMetadataRecord(group_id, member_id, None)
        assignor = payload["server_assignor"]
        return ConsumerMemberMetadataRecord(group_id, member_id, ConsumerMemberMetadataValue(
            instance_id=_optional_str(payload["instance_id"]), rack_id=_optional_str(payload["rack_id"]),
            client_id=str(payload["client_id"]), client_host=str(payload["client_host"]),
            subscribed_topic_names=tuple(str(n) for n in payload["subscribed_topic_names"]),
            subscribed_topic_regex=str(payload["subscribed_topic_regex"]),
            server_assignor=None if assignor is None else str(assignor),
            rebalance_timeout_ms=int(payload["rebalance_timeout_ms"]),
            classic=_classic_from_json(payload.get("classic_member_metadata"))))
    if kind == CONSUMER_GROUP_CURRENT_ASSIGNMENT_KIND:
        if payload is None:
            return CurrentAssignmentRecord(group_id, member_id, None)
        return CurrentAssignmentRecord(group_id, member_id, CurrentAssignmentValue(
            member_epoch=int(payload["member_epoch"]), previous_member_epoch=int(payload["previous_member_epoch"]),
            state=int(payload["state"]), assigned=_epochs_from_json(payload["assigned"]),
            pending_revocation=_epochs_from_json(payload["pending_revocation"])))
    raise ValueError(f"not a consumer group record kind: {kind!r}")


def _optional_str(value: Any) -> str | None:
    return None if value is None else str(value)
