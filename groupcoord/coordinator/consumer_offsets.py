"""OffsetCommit, OffsetFetch, OffsetDelete and offset expiry of a consumer group (KIP-848): the member-epoch checks
of :mod:`groupcoord.coordinator.consumer_epochs` in front of the offsets that classic groups keep too.

A commit names the member by id and its epoch in ``generation_id`` (Kafka's ``GenerationIdOrMemberEpoch``). The
member's own epoch commits anything; a newer one is STALE_MEMBER_EPOCH for the whole commit; an older one commits
only if every partition was assigned to the member at or before it (KIP-1251): one that was not fails the whole
commit with STALE_MEMBER_EPOCH, as in Kafka 4.4, whose per-partition check throws out of the commit (a partition
refused for its own reason, such as too large metadata, is not checked).
"""

from __future__ import annotations

from uuid import UUID

from groupcoord.coordinator.consumer_epochs import validate_offset_commit, validate_offset_fetch
from groupcoord.coordinator.consumer_membership import delete_consumer_group
from groupcoord.coordinator.consumer_topics import group_topics
from groupcoord.coordinator.context import CoordinatorContext
from groupcoord.coordinator.offsets import (
    accepted_commits,
    delete_offsets,
    handle_offset_fetch,
    partition_error,
    partition_errors,
)
from groupcoord.coordinator.records import new_offset_tombstone
from groupcoord.coordinator.validation import throw_if_invalid_group_id
from groupcoord.group.consumer_group import ConsumerGroup
from groupcoord.group.member import Token
from groupcoord.protocol.errors import ErrorCode, Errors, ProtocolError
from groupcoord.protocol.requests import (
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
)
from groupcoord.protocol.responses import OffsetCommitResponse, TopicPartitionErrors

UNKNOWN_TOPIC_ID = UUID(int=0)
"""The id a commit's topic gets when the coordinator does not know its name: no member can own it."""


def handle_consumer_offset_commit(ctx: CoordinatorContext, group: ConsumerGroup, request: OffsetCommitRequest,
                                  now_ms: int, token: Token) -> None:
    """Commit offsets of a consumer group after Kafka 4.4's member-epoch checks."""
    throw_if_invalid_group_id(request.group_id)
    if request.retention_time_ms < -1:
        raise ProtocolError(Errors.INVALID_REQUEST, f"negative retention time {request.retention_time_ms}")
    validate = validate_offset_commit(
        group, member_id=request.member_id, group_instance_id=request.group_instance_id,
        member_epoch=request.generation_id, is_transactional=False, api_version=request.api_version)

    def error_of(topic: str, partition: OffsetCommitPartition) -> ErrorCode:
        error = partition_error(ctx, topic, partition)
        if not error.is_error:
            validate(topic, ctx.topic_ids.get(topic, UNKNOWN_TOPIC_ID), partition.partition)
        return error

    errors = [[error_of(t.name, p) for p in t.partitions] for t in request.topics]
    commits = accepted_commits(request, errors, now_ms)
    if commits.partitions:
        ctx.append_offsets(commits)
    ctx.respond(token, OffsetCommitResponse(topics=tuple(
        TopicPartitionErrors(t.name, partition_errors(t.partitions, topic_errors))
        for t, topic_errors in zip(request.topics, errors, strict=True))))


def handle_consumer_offset_fetch(ctx: CoordinatorContext, group: ConsumerGroup, request: OffsetFetchRequest,
                                 now_ms: int, token: Token) -> None:
    """Fetch a consumer group's offsets: a fetch naming a member must be at the member's epoch exactly."""
    validate_offset_fetch(group, member_id=request.member_id, member_epoch=request.member_epoch)
    handle_offset_fetch(ctx, request, now_ms, token)


def handle_consumer_offset_delete(ctx: CoordinatorContext, group: ConsumerGroup, request: OffsetDeleteRequest,
                                  now_ms: int, token: Token) -> None:
    """Delete a consumer group's offsets, except of topics a member subscribes to (GROUP_SUBSCRIBED_TO_TOPIC)."""
    subscribed = group_topics(ctx, group)
    delete_offsets(ctx, group.group_id, request, lambda topic: topic in subscribed, token)


def expire_consumer_offsets(ctx: CoordinatorContext, now_ms: int) -> None:
    """KIP-211 for consumer groups, as Kafka's modern groups do it: an offset of a topic no member subscribes to
    expires ``offsets.retention`` after its commit (or at its explicit expiry); an empty group left without
    offsets is deleted."""
    retention = ctx.config.offsets_retention_ms
    for group_id in ctx.hard.consumer_group_ids():
        group = ctx.hard.consumer_group(group_id)
        assert group is not None
        subscribed = group_topics(ctx, group)
        for (topic, partition), value in sorted(ctx.hard.offsets(group_id).items()):
            if topic in subscribed:
                continue
            deadline = (value.expire_timestamp_ms if value.expire_timestamp_ms is not None
                        else value.commit_timestamp_ms + retention)
            if now_ms >= deadline:
                ctx.append(new_offset_tombstone(group_id, topic, partition))
        if not group.members and not ctx.hard.offsets(group_id):
            delete_consumer_group(ctx, group, with_offsets=False)
