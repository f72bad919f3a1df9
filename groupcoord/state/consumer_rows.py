"""Consumer groups (KIP-848) in the state tables: the rows of the ``groups``, ``members`` and ``assignments`` tables.

A consumer group is written as many small records (its epoch, each member's metadata, each member's target and
current assignment), where a classic group is one record per generation. The materializer therefore keeps a replica
of its consumer groups (the core's own replay, :func:`~groupcoord.coordinator.consumer_replay.replay_consumer_record`)
and, for each group the records of a flush touched, writes the group as it stands after them: one ``groups`` row
(``generation`` is the group epoch, ``protocol`` the server assignor its members ask for), every member, and every
partition a member owns now (its current assignment, with what it is still revoking; not its target), all at the
tags of the group's last record, which the views read as the group's current entry. In the ``members`` and
``assignments`` tables, ``generation`` is the member's epoch.

The records of one flush replay into copies of the groups they touch (:class:`StagedConsumerGroups`); the copies
replace the replica only once the flush's writes succeed, so a failed flush that runs again replays onto the state it
started from.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from groupcoord.coordinator.consumer_records import (
    ConsumerGroupMetadataRecord,
    ConsumerGroupRecord,
    ConsumerMemberMetadataRecord,
    CurrentAssignmentRecord,
    TargetAssignmentMemberRecord,
    TargetAssignmentMetadataRecord,
)
from groupcoord.coordinator.consumer_replay import (
    ConsumerReplayError,
    consumer_group_records,
    replay_consumer_record,
)
from groupcoord.group.consumer_group import ConsumerGroup

log = logging.getLogger("groupcoord.state.consumer_rows")

CONSUMER_RECORD_TYPES = (ConsumerGroupMetadataRecord, ConsumerMemberMetadataRecord, TargetAssignmentMemberRecord,
                         TargetAssignmentMetadataRecord, CurrentAssignmentRecord)
"""The record kinds of consumer groups."""
CONSUMER_PROTOCOL_TYPE = "consumer"
"""The ``protocol_type`` of a consumer group's row (Kafka's ListGroups shows the same)."""

Row = Callable[..., None]
"""Adds one row to a table: ``row(table_name, **columns)``."""


@dataclass(frozen=True)
class Touch:
    """Where the last record of a group in a flush stands: its tags and the batch's commit time."""

    tags: dict[str, int]
    now_ms: int


class ConsumerGroupReplica:
    """The consumer groups as the materialized records left them."""

    def __init__(self) -> None:
        self.groups: dict[str, ConsumerGroup] = {}

    def staged(self) -> StagedConsumerGroups:
        """A flush's view of the groups, changed by its records apart from this replica."""
        return StagedConsumerGroups(self)


class StagedConsumerGroups:
    """The groups one flush's records touch, replayed onto copies (see the module)."""

    def __init__(self, replica: ConsumerGroupReplica) -> None:
        self._replica = replica
        self._scratch: dict[str, ConsumerGroup] = {}
        self.touched: dict[str, Touch] = {}

    def replay(self, record: ConsumerGroupRecord, tags: dict[str, int], now_ms: int) -> None:
        """Apply ``record`` to the copy of its group (made from the replica at the group's first record)."""
        group_id = record.group_id
        if group_id not in self.touched and group_id in self._replica.groups:
            for restated in consumer_group_records(self._replica.groups[group_id]):  # a copy, by the records
                replay_consumer_record(self._scratch, restated)                     # that rebuild the group
        self.touched[group_id] = Touch(tags, now_ms)
        try:
            replay_consumer_record(self._scratch, record)
        except ConsumerReplayError as exc:  # the coordinator wrote it, so it replays there; keep the tables going
            log.warning("consumer group %s: a record the state tables cannot apply: %s", group_id, exc)

    def group(self, group_id: str) -> ConsumerGroup | None:
        """A touched group as the flush's records leave it (``None``: deleted)."""
        return self._scratch.get(group_id)

    def commit(self) -> None:
        """Make the flush's copies the replica's groups (call it once the flush's writes succeeded)."""
        for group_id in self.touched:
            group = self._scratch.get(group_id)
            if group is None:
                self._replica.groups.pop(group_id, None)
            else:
                self._replica.groups[group_id] = group


def add_consumer_group_rows(row: Row, group_id: str, group: ConsumerGroup | None, touch: Touch,
                            topic_name: Callable[[UUID], str]) -> None:
    """The rows of ``group`` as it stands (a deletion when it is ``None``)."""
    tags: dict[str, Any] = dict(touch.tags)
    if group is None:
        row("groups", group_id=group_id, generation=None, state="Dead", protocol_type=None, protocol=None,
            leader=None, member_count=0, updated_at=touch.now_ms, deleted=True, **tags)
        row("members", group_id=group_id, deleted=True, **tags)
        row("assignments", group_id=group_id, deleted=True, **tags)
        return
    members = sorted(group.members.values(), key=lambda m: m.member_id)
    row("groups", group_id=group_id, generation=group.group_epoch, state=group.state.value,
        protocol_type=CONSUMER_PROTOCOL_TYPE, protocol=group.preferred_server_assignor(), leader=None,
        member_count=len(members), updated_at=touch.now_ms, deleted=False, **tags)
    for member in members:
        row("members", group_id=group_id, generation=member.member_epoch, member_id=member.member_id,
            group_instance_id=member.instance_id, client_id=member.client_id, client_host=member.client_host,
            session_timeout_ms=None if member.classic is None else member.classic.session_timeout_ms,
            rebalance_timeout_ms=member.rebalance_timeout_ms,
            subscribed_topics=sorted(member.subscribed_topic_names), deleted=False, **tags)
    if not members:
        row("members", group_id=group_id, generation=group.group_epoch, deleted=True, **tags)
    assigned = 0
    for member in members:
        owned = {(t, p) for source in (member.assigned_partitions, member.partitions_pending_revocation)
                 for t, ps in source.items() for p in ps}
        for topic_id, partition in sorted(owned):
            row("assignments", group_id=group_id, generation=member.member_epoch, member_id=member.member_id,
                group_instance_id=member.instance_id, topic=topic_name(topic_id), partition=partition,
                deleted=False, **tags)
            assigned += 1
    if not assigned:
        row("assignments", group_id=group_id, generation=group.group_epoch, deleted=True, **tags)


__all__ = ["CONSUMER_PROTOCOL_TYPE", "CONSUMER_RECORD_TYPES", "ConsumerGroupReplica", "StagedConsumerGroups", "Touch",
           "add_consumer_group_rows"]
