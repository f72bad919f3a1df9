"""OffsetCommit, OffsetFetch, OffsetDelete and offset expiry (KIP-211), over the hard state's offsets."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from groupcoord.coordinator import rebalance
from groupcoord.coordinator.context import CoordinatorContext
from groupcoord.coordinator.records import (
    OffsetCommits,
    OffsetValue,
    new_group_tombstone,
    new_offset_commits,
    new_offset_tombstone,
)
from groupcoord.coordinator.validation import (
    is_valid_topic_name,
    throw_if_dead,
    throw_if_illegal_generation,
    throw_if_invalid_group_id,
    throw_if_not_current_member,
)
from groupcoord.group.group import ClassicGroup
from groupcoord.group.member import Token
from groupcoord.group.state import GroupState
from groupcoord.protocol.consumer_protocol import PROTOCOL_TYPE as CONSUMER_PROTOCOL_TYPE
from groupcoord.protocol.errors import ErrorCode, Errors, ProtocolError
from groupcoord.protocol.named_tuples import from_rows
from groupcoord.protocol.requests import (
    UNKNOWN_MEMBER_ID,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
)
from groupcoord.protocol.responses import (
    OffsetCommitResponse,
    OffsetDeleteResponse,
    OffsetFetchPartition,
    OffsetFetchResponse,
    OffsetFetchTopicResponse,
    PartitionError,
    TopicPartitionErrors,
)

log = logging.getLogger("groupcoord.coordinator.offsets")

_partition_error_of_row = from_rows(PartitionError)

_S = GroupState


def commit_error_response(request: OffsetCommitRequest, error: ErrorCode) -> OffsetCommitResponse:
    """The same ``error`` for every partition of ``request``."""
    return OffsetCommitResponse(topics=tuple(
        TopicPartitionErrors(t.name, tuple(PartitionError(p.partition, error) for p in t.partitions))
        for t in request.topics))


def handle_offset_commit(ctx: CoordinatorContext, request: OffsetCommitRequest, now_ms: int, token: Token) -> None:
    """Commit offsets for the current generation (or a simple commit with generation -1 on an Empty group)."""
    throw_if_invalid_group_id(request.group_id)
    if request.retention_time_ms < -1:
        raise ProtocolError(Errors.INVALID_REQUEST, f"negative retention time {request.retention_time_ms}")
    group = ctx.groups.get(request.group_id)
    if group is None:
        if request.generation_id >= 0:
            raise ProtocolError(Errors.ILLEGAL_GENERATION, f"group {request.group_id} has no generation")
        group = ClassicGroup(request.group_id, now_ms=now_ms)
    _validate_commit(group, request)
    if group.is_in(_S.COMPLETING_REBALANCE):
        raise ProtocolError(Errors.REBALANCE_IN_PROGRESS, "the group is completing a rebalance")
    # One error per request entry, not per (topic, partition): a partition named twice must not let a valid entry
    # hide an invalid one (the invalid one would then reach a record).
    errors = [topic_errors_of(ctx, t.name, t.partitions) for t in request.topics]
    commits = accepted_commits(request, errors, now_ms)
    if commits.partitions:
        if request.group_id not in ctx.groups:
            ctx.register_group(group)
        if group.has(request.member_id):
            rebalance.heartbeat(ctx, group, group.get(request.member_id), now_ms)
        ctx.append_offsets(commits)
    ctx.respond(token, OffsetCommitResponse(topics=tuple(
        TopicPartitionErrors(t.name, partition_errors(t.partitions, topic_errors))
        for t, topic_errors in zip(request.topics, errors, strict=True))))


def accepted_commits(request: OffsetCommitRequest, errors: Sequence[list[ErrorCode]], now_ms: int) -> OffsetCommits:
    """The block of the offsets of ``request`` to commit at ``now_ms``: those of its partitions whose error (in
    ``errors``, per topic of the request) is NONE, with the request's retention."""
    expire = now_ms + request.retention_time_ms if request.retention_time_ms > 0 else None
    return new_offset_commits(request.group_id, [
        (t.name, _accepted(t.partitions, topic_errors)) for t, topic_errors in zip(request.topics, errors, strict=True)
    ], now_ms, expire)


def partition_errors(partitions: Sequence[OffsetCommitPartition],
                     errors: Sequence[ErrorCode]) -> tuple[PartitionError, ...]:
    """Each of ``partitions`` with its error, built without a Python call per partition."""
    return tuple(map(_partition_error_of_row, zip([p.partition for p in partitions], errors, strict=True)))


def _accepted(partitions: Sequence[OffsetCommitPartition],
              errors: list[ErrorCode]) -> Sequence[OffsetCommitPartition]:
    """The partitions whose error is NONE (all of them, without a look at each, when every error is)."""
    if errors.count(Errors.NONE) == len(errors):
        return partitions
    return [p for p, error in zip(partitions, errors, strict=True) if not error.is_error]


def _validate_commit(group: ClassicGroup, request: OffsetCommitRequest) -> None:
    throw_if_dead(group)
    if request.generation_id >= 0 or request.member_id != UNKNOWN_MEMBER_ID or request.group_instance_id:
        throw_if_not_current_member(group, request.member_id, request.group_instance_id)
        throw_if_illegal_generation(group, request.generation_id)
    elif not group.is_in(_S.EMPTY):
        raise ProtocolError(Errors.UNKNOWN_MEMBER_ID, "only members may commit to a non-empty group")


def partition_error(ctx: CoordinatorContext, topic: str, partition: OffsetCommitPartition) -> ErrorCode:
    """The error of one partition of a commit (a bad topic name, partition, leader epoch or metadata), else NONE."""
    if not is_valid_topic_name(topic):
        return Errors.INVALID_TOPIC_EXCEPTION
    return _partition_error(partition, ctx.config.offset_metadata_max_bytes)


def topic_errors_of(ctx: CoordinatorContext, topic: str,
                    partitions: Sequence[OffsetCommitPartition]) -> list[ErrorCode]:
    """:func:`partition_error` of each of ``partitions`` of ``topic`` (the topic's name checked once)."""
    if not is_valid_topic_name(topic):
        return [Errors.INVALID_TOPIC_EXCEPTION] * len(partitions)
    limit = ctx.config.offset_metadata_max_bytes
    if partitions and _all_valid(partitions, limit):  # the usual case, checked column by column
        return [Errors.NONE] * len(partitions)
    return [_partition_error(partition, limit) for partition in partitions]


def _all_valid(partitions: Sequence[OffsetCommitPartition], metadata_limit: int) -> bool:
    """Whether no partition of ``partitions`` has an error of :func:`_partition_error` (a sufficient test: the
    metadata bound is the cheap one, 2 UTF-16 code units per code point at most)."""
    indexes, _, epochs, metadata = zip(*partitions, strict=True)
    return min(indexes) >= 0 and min(epochs) >= -1 and 2 * max(map(len, metadata)) <= metadata_limit


def _partition_error(partition: OffsetCommitPartition, metadata_limit: int) -> ErrorCode:
    if partition.partition < 0:
        return Errors.UNKNOWN_TOPIC_OR_PARTITION
    if partition.leader_epoch < -1:
        return Errors.INVALID_REQUEST
    # A str of n code points is at most 2n UTF-16 code units: short metadata needs no encoding to be within.
    metadata = partition.metadata
    if 2 * len(metadata) > metadata_limit and metadata_length(metadata) > metadata_limit:
        return Errors.OFFSET_METADATA_TOO_LARGE
    return Errors.NONE


def metadata_length(metadata: str) -> int:
    """The length Kafka compares with ``offset.metadata.max.bytes``: Java's ``String.length()``, UTF-16 code units
    (so 2049 two-byte characters, 4098 UTF-8 bytes, are within a limit of 4096). Any offset is accepted, negative
    ones included: Kafka stores and returns what the client committed."""
    return len(metadata.encode("utf-16-le")) // 2


def handle_offset_fetch(ctx: CoordinatorContext, request: OffsetFetchRequest, now_ms: int, token: Token) -> None:
    """Committed offsets of the asked partitions (-1 where none, a negative partition included, as in Kafka), or of
    all partitions when ``topics`` is None."""
    throw_if_invalid_group_id(request.group_id)
    offsets = ctx.hard.offsets(request.group_id)
    if request.topics is None:
        by_topic: dict[str, list[OffsetFetchPartition]] = {}
        for (topic, partition), value in sorted(offsets.items()):
            by_topic.setdefault(topic, []).append(_fetched(partition, value))
        topics = tuple(OffsetFetchTopicResponse(t, tuple(ps)) for t, ps in by_topic.items())
    else:
        topics = tuple(
            OffsetFetchTopicResponse(t.name, tuple(_fetched(p, offsets.get((t.name, p))) for p in t.partitions))
            for t in request.topics)
    ctx.respond(token, OffsetFetchResponse(error=Errors.NONE, topics=topics))


def _fetched(partition: int, value: OffsetValue | None) -> OffsetFetchPartition:
    if value is None:
        return OffsetFetchPartition(partition, -1)
    return OffsetFetchPartition(partition, value.offset, value.leader_epoch, value.metadata)


def handle_offset_delete(ctx: CoordinatorContext, request: OffsetDeleteRequest, now_ms: int, token: Token) -> None:
    """Delete offsets, except of topics an active ``consumer`` group still subscribes to (GROUP_SUBSCRIBED_TO_TOPIC).

    A non-consumer group must be Empty (NON_EMPTY_GROUP). A group left Empty without offsets stays, as in Kafka
    (described, listed, deletable) until the expiry cycle (:func:`expire_offsets`) removes it.
    """
    throw_if_invalid_group_id(request.group_id)
    group = ctx.groups.get(request.group_id)
    if group is None or group.is_in(_S.DEAD):
        raise ProtocolError(Errors.GROUP_ID_NOT_FOUND, f"group {request.group_id} does not exist")
    active = not group.is_in(_S.EMPTY)
    if active and group.protocol_type != CONSUMER_PROTOCOL_TYPE:
        raise ProtocolError(Errors.NON_EMPTY_GROUP, f"group {group.group_id} is {group.state.value}")
    delete_offsets(ctx, group.group_id, request, lambda topic: active and group.is_subscribed_to_topic(topic), token)


def delete_offsets(ctx: CoordinatorContext, group_id: str, request: OffsetDeleteRequest,
                   subscribed: Callable[[str], bool], token: Token) -> None:
    """Delete the requested offsets of ``group_id`` and answer: GROUP_SUBSCRIBED_TO_TOPIC for each partition of a
    topic the group reads (``subscribed``), UNKNOWN_TOPIC_OR_PARTITION for a negative partition; a partition with no
    offset is no error."""
    offsets = ctx.hard.offsets(group_id)
    results = []
    for topic in request.topics:
        topic_subscribed = subscribed(topic.name)
        partition_errors = []
        for partition in topic.partitions:
            if topic_subscribed:
                error = Errors.GROUP_SUBSCRIBED_TO_TOPIC
            elif partition < 0:
                error = Errors.UNKNOWN_TOPIC_OR_PARTITION
            else:
                error = Errors.NONE
                if (topic.name, partition) in offsets:
                    ctx.append(new_offset_tombstone(group_id, topic.name, partition))
            partition_errors.append(PartitionError(partition, error))
        results.append(TopicPartitionErrors(topic.name, tuple(partition_errors)))
    ctx.respond(token, OffsetDeleteResponse(error=Errors.NONE, topics=tuple(results)))


def _maybe_drop_empty_group(ctx: CoordinatorContext, group: ClassicGroup, now_ms: int) -> None:
    """An Empty group without offsets is Dead: persist its deletion and forget it."""
    if group.is_in(_S.EMPTY) and not group.pending_members and not ctx.hard.offsets(group.group_id):
        group.transition_to(_S.DEAD, now_ms)
        if ctx.hard.group(group.group_id) is not None:
            ctx.append(new_group_tombstone(group.group_id))
        ctx.forget_group(group)


def expire_offsets(ctx: CoordinatorContext, now_ms: int) -> None:
    """KIP-211: drop offsets past retention, then groups left Empty with no offsets.

    An Empty group's clock starts when it became Empty; a Stable ``consumer`` group's offsets of topics it no
    longer subscribes to age from their last commit; a group without a protocol (simple commits) ages each
    offset from its commit. Offsets committed with an explicit retention expire at their own time.
    """
    retention = ctx.config.offsets_retention_ms
    for group_id in sorted(ctx.groups):
        group = ctx.groups[group_id]
        offsets = ctx.hard.offsets(group_id)
        expired = []
        for (topic, partition), value in sorted(offsets.items()):
            base = _expiry_base(group, topic, value)
            if value.expire_timestamp_ms is not None:
                is_expired = base is not None and now_ms >= value.expire_timestamp_ms
            else:
                is_expired = base is not None and now_ms - base >= retention
            if is_expired:
                expired.append((topic, partition))
        for topic, partition in expired:
            ctx.append(new_offset_tombstone(group_id, topic, partition))
        if expired:
            log.info("group %s: %d offsets expired", group_id, len(expired))
        _maybe_drop_empty_group(ctx, group, now_ms)


def _expiry_base(group: ClassicGroup, topic: str, value: OffsetValue) -> int | None:
    """When the retention clock of one offset started, or ``None`` when it does not run."""
    if group.protocol_type is None:
        return value.commit_timestamp_ms
    if group.is_in(_S.EMPTY):
        return group.state_timestamp_ms
    if (group.protocol_type == CONSUMER_PROTOCOL_TYPE and group.is_in(_S.STABLE)
            and group.subscribed_topics is not None and topic not in group.subscribed_topics):
        return value.commit_timestamp_ms
    return None
