"""Offset APIs on the wire: OffsetCommit, OffsetFetch (with the v8+ multi-group batch), OffsetDelete."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from kafka.protocol.consumer import OffsetCommitResponse as WireOffsetCommitResponse
from kafka.protocol.consumer import OffsetDeleteResponse as WireOffsetDeleteResponse
from kafka.protocol.consumer import OffsetFetchResponse as WireOffsetFetchResponse

from groupcoord.protocol.errors import ErrorCode, Errors
from groupcoord.protocol.requests import (
    NO_GENERATION,
    UNKNOWN_MEMBER_ID,
    GroupRequest,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitTopic,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    OffsetFetchTopic,
)
from groupcoord.protocol.responses import (
    OffsetDeleteResponse,
    OffsetFetchPartition,
    OffsetFetchResponse,
    OffsetFetchTopicResponse,
    PartitionError,
    TopicPartitionErrors,
)
from groupcoord.server.adapters.core import Outcome
from groupcoord.server.adapters.groups import single
from groupcoord.server.adapters.known_partitions import KnownTopics, TopicPartitionKey, with_unknown
from groupcoord.server.api import RequestContext

_CommitTopic = WireOffsetCommitResponse.OffsetCommitResponseTopic
_CommitPartition = _CommitTopic.OffsetCommitResponsePartition
_FetchTopic = WireOffsetFetchResponse.OffsetFetchResponseTopic
_FetchPartition = _FetchTopic.OffsetFetchResponsePartition
_FetchGroup = WireOffsetFetchResponse.OffsetFetchResponseGroup
_GroupTopic = _FetchGroup.OffsetFetchResponseTopics
_GroupPartition = _GroupTopic.OffsetFetchResponsePartitions
_DeleteTopic = WireOffsetDeleteResponse.OffsetDeleteResponseTopic
_DeletePartition = _DeleteTopic.OffsetDeleteResponsePartition

_NO_OFFSET = -1
_NO_EPOCH = -1


def _failed_partitions(
    topics: Iterable[OffsetCommitTopic | OffsetFetchTopic], error: ErrorCode
) -> tuple[TopicPartitionErrors, ...]:
    """``error`` for every requested partition."""
    return tuple(
        TopicPartitionErrors(
            topic.name,
            tuple(
                PartitionError(p.partition if isinstance(p, OffsetCommitPartition) else p, error)
                for p in topic.partitions
            ),
        )
        for topic in topics
    )


class OffsetCommitMapping:
    """OffsetCommit v2-v9 (v10 identifies topics by id and is not advertised).

    A null metadata string is stored as empty, as Kafka does; ``retention_time_ms`` exists in v2-v4 only. With
    ``known`` topics, partitions that do not exist get UNKNOWN_TOPIC_OR_PARTITION and never reach the core; a request
    left with none is not submitted at all (Kafka's broker does both).
    """

    def __init__(self, known: KnownTopics | None = None) -> None:
        self._known = known

    def named_partitions(self, ctx: RequestContext) -> list[TopicPartitionKey]:
        """Every partition the request commits."""
        return [(topic.name, p.partition_index) for topic in ctx.body.topics for p in topic.partitions]

    def unscreened(self, ctx: RequestContext) -> Sequence[GroupRequest]:
        """One core OffsetCommitRequest of every named partition."""
        return [self._requested(ctx)]

    def to_core(self, ctx: RequestContext) -> Sequence[GroupRequest]:
        """One core OffsetCommitRequest of the existing partitions (none when no partition exists)."""
        request = self._requested(ctx)
        if self._known is None:
            return [request]
        known = self._known
        topics = tuple(OffsetCommitTopic(topic.name, kept) for topic in request.topics
                       if (kept := tuple(p for p in topic.partitions if known.exists(topic.name, p.partition))))
        return [replace(request, topics=topics)] if topics else []

    def _requested(self, ctx: RequestContext) -> OffsetCommitRequest:
        body = ctx.body
        version = ctx.api_version
        return OffsetCommitRequest(
            group_id=body.group_id,
            generation_id=body.generation_id_or_member_epoch if version >= 1 else NO_GENERATION,
            member_id=body.member_id if version >= 1 else UNKNOWN_MEMBER_ID,
            group_instance_id=body.group_instance_id if version >= 7 else None,
            retention_time_ms=body.retention_time_ms if 2 <= version <= 4 else -1,
            topics=tuple(
                OffsetCommitTopic(
                    topic.name,
                    tuple(
                        OffsetCommitPartition(
                            partition=p.partition_index,
                            offset=p.committed_offset,
                            leader_epoch=p.committed_leader_epoch if version >= 6 else _NO_EPOCH,
                            metadata=p.committed_metadata or "",
                        )
                        for p in topic.partitions
                    ),
                )
                for topic in body.topics
            ),
        )

    def to_wire(self, ctx: RequestContext, requests: Sequence[GroupRequest], outcomes: Sequence[Outcome]) -> Any:
        """An error per partition (a failed request gives every submitted partition its error)."""
        topics: tuple[TopicPartitionErrors, ...] = ()
        for request, outcome in zip(requests, outcomes, strict=True):
            assert isinstance(request, OffsetCommitRequest)
            topics = _failed_partitions(request.topics, outcome) if isinstance(outcome, ErrorCode) else outcome.topics
        if self._known is not None:
            sent = [(t.name, p.partition) for request in requests if isinstance(request, OffsetCommitRequest)
                    for t in request.topics for p in t.partitions]
            topics = with_unknown(self.named_partitions(ctx), sent, topics)
        return ctx.response(
            throttle_time_ms=0,
            topics=[
                _CommitTopic(
                    name=topic.name,
                    partitions=[
                        _CommitPartition(partition_index=p.partition, error_code=p.error.code) for p in topic.partitions
                    ],
                )
                for topic in topics
            ],
        )


def _fetch_topics(topics: Any) -> tuple[OffsetFetchTopic, ...] | None:
    if topics is None:
        return None
    return tuple(OffsetFetchTopic(topic.name, tuple(topic.partition_indexes)) for topic in topics)


class OffsetFetchMapping:
    """OffsetFetch v1-v9. v8+ asks for several groups at once: each group is its own core request and its own
    outcome. A null topic list (v2+) asks for every committed offset of the group. In v1, which has no top-level
    error, a group-level error is reported on every requested partition, as Kafka does."""

    def to_core(self, ctx: RequestContext) -> Sequence[GroupRequest]:
        """One core OffsetFetchRequest per group."""
        body = ctx.body
        version = ctx.api_version
        require_stable = bool(body.require_stable) if version >= 7 else False
        if version < 8:
            return [OffsetFetchRequest(group_id=body.group_id, topics=_fetch_topics(body.topics),
                                       require_stable=require_stable)]
        return [
            OffsetFetchRequest(
                group_id=group.group_id,
                topics=_fetch_topics(group.topics),
                member_id=group.member_id if version >= 9 else None,
                member_epoch=group.member_epoch if version >= 9 else -1,
                require_stable=require_stable,
            )
            for group in body.groups
        ]

    def to_wire(self, ctx: RequestContext, requests: Sequence[GroupRequest], outcomes: Sequence[Outcome]) -> Any:
        """The single-group layout before v8, one entry per group from v8."""
        responses = [_fetch_response(request, outcome) for request, outcome in zip(requests, outcomes, strict=True)]
        if ctx.api_version < 8:
            (response,) = responses
            if ctx.api_version < 2 and response.error is not Errors.NONE:
                response = _fetch_response(requests[0], response.error)
            return ctx.response(
                throttle_time_ms=0,
                error_code=response.error.code,
                topics=[
                    _FetchTopic(name=topic.name, partitions=[_partition(_FetchPartition, p) for p in topic.partitions])
                    for topic in response.topics
                ],
            )
        return ctx.response(
            throttle_time_ms=0,
            groups=[
                _FetchGroup(
                    group_id=request.group_id,
                    error_code=response.error.code,
                    topics=[
                        _GroupTopic(
                            name=topic.name, partitions=[_partition(_GroupPartition, p) for p in topic.partitions]
                        )
                        for topic in response.topics
                    ],
                )
                for request, response in zip(requests, responses, strict=True)
                if isinstance(request, OffsetFetchRequest)
            ],
        )


def _fetch_response(request: GroupRequest, outcome: Outcome) -> OffsetFetchResponse:
    """The core response, or for a failed request the group error plus, per requested partition, the same error."""
    if not isinstance(outcome, ErrorCode):
        assert isinstance(outcome, OffsetFetchResponse)
        return outcome
    assert isinstance(request, OffsetFetchRequest)
    topics = tuple(
        OffsetFetchTopicResponse(
            topic.name, tuple(OffsetFetchPartition(p, _NO_OFFSET, error=outcome) for p in topic.partitions)
        )
        for topic in request.topics or ()
    )
    return OffsetFetchResponse(error=outcome, topics=topics)


def _partition(wire_class: Any, partition: OffsetFetchPartition) -> Any:
    return wire_class(
        partition_index=partition.partition,
        committed_offset=partition.offset,
        committed_leader_epoch=partition.leader_epoch,
        metadata=partition.metadata,
        error_code=partition.error.code,
    )


class OffsetDeleteMapping:
    """OffsetDelete v0: a group-level error and an error per partition (a failed request has only the former).

    With ``known`` topics, partitions that do not exist get UNKNOWN_TOPIC_OR_PARTITION and the core sees the rest;
    a group-level error replaces every partition's, as in Kafka.
    """

    def __init__(self, known: KnownTopics | None = None) -> None:
        self._known = known

    def named_partitions(self, ctx: RequestContext) -> list[TopicPartitionKey]:
        """Every partition the request deletes."""
        return [(topic.name, p.partition_index) for topic in ctx.body.topics for p in topic.partitions]

    def unscreened(self, ctx: RequestContext) -> Sequence[GroupRequest]:
        """One core OffsetDeleteRequest of every named partition."""
        return [self._request(ctx, self.named_partitions(ctx))]

    def to_core(self, ctx: RequestContext) -> Sequence[GroupRequest]:
        """One core OffsetDeleteRequest (of the existing partitions only, with ``known`` topics)."""
        known = self._known
        return [self._request(ctx, [(topic, partition) for topic, partition in self.named_partitions(ctx)
                                    if known is None or known.exists(topic, partition)])]

    @staticmethod
    def _request(ctx: RequestContext, partitions: list[TopicPartitionKey]) -> OffsetDeleteRequest:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(partition)
        topics = tuple(OffsetFetchTopic(name, tuple(parts)) for name, parts in by_topic.items())
        return OffsetDeleteRequest(group_id=ctx.body.group_id, topics=topics)

    def to_wire(self, ctx: RequestContext, requests: Sequence[GroupRequest], outcomes: Sequence[Outcome]) -> Any:
        """The group error and the per-partition errors."""
        response: OffsetDeleteResponse = single(outcomes, lambda error: OffsetDeleteResponse(error=error))
        if self._known is not None and response.error is Errors.NONE:
            (request,) = requests
            assert isinstance(request, OffsetDeleteRequest)
            sent = [(t.name, p) for t in request.topics for p in t.partitions]
            response = replace(response, topics=with_unknown(self.named_partitions(ctx), sent, response.topics))
        return ctx.response(
            throttle_time_ms=0,
            error_code=response.error.code,
            topics=[
                _DeleteTopic(
                    name=topic.name,
                    partitions=[
                        _DeletePartition(partition_index=p.partition, error_code=p.error.code) for p in topic.partitions
                    ],
                )
                for topic in response.topics
            ],
        )

