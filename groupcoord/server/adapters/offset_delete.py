"""OffsetDelete v0 on the wire <-> the core's OffsetDeleteRequest (kafka-python's classes)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from kafka.protocol.consumer import OffsetDeleteResponse as WireOffsetDeleteResponse

from groupcoord.protocol.errors import Errors
from groupcoord.protocol.requests import GroupRequest, OffsetDeleteRequest, OffsetFetchTopic
from groupcoord.protocol.responses import OffsetDeleteResponse, TopicPartitionErrors
from groupcoord.server.adapters.core import Outcome
from groupcoord.server.adapters.groups import single
from groupcoord.server.adapters.known_partitions import KnownTopics, TopicPartitionKey, with_unknown
from groupcoord.server.api import RequestContext

_DeleteTopic = WireOffsetDeleteResponse.OffsetDeleteResponseTopic
_DeletePartition = _DeleteTopic.OffsetDeleteResponsePartition


class OffsetDeleteMapping:
    """OffsetDelete v0: a group-level error and an error per partition (a failed request has only the former).

    With ``known`` topics, partitions that do not exist get UNKNOWN_TOPIC_OR_PARTITION and the core sees the rest;
    a group-level error replaces every partition's, as in Kafka.
    """

    def __init__(self, known: KnownTopics | None = None) -> None:
        self._known = known

    def named_partitions(self, ctx: RequestContext) -> list[tuple[str, int]]:
        """Every partition the request deletes."""
        return [(topic.name, p.partition_index) for topic in ctx.body.topics for p in topic.partitions]

    def checked_partitions(self, ctx: RequestContext) -> list[TopicPartitionKey]:
        """Every partition the request deletes (each must exist)."""
        return list(self.named_partitions(ctx))

    def unscreened(self, ctx: RequestContext) -> Sequence[GroupRequest]:
        """One core OffsetDeleteRequest of every named partition."""
        return [self._request(ctx, self.named_partitions(ctx))]

    def to_core(self, ctx: RequestContext) -> Sequence[GroupRequest]:
        """One core OffsetDeleteRequest (of the existing partitions only, with ``known`` topics)."""
        known = self._known
        return [self._request(ctx, [(topic, partition) for topic, partition in self.named_partitions(ctx)
                                    if known is None or known.exists(topic, partition)])]

    @staticmethod
    def _request(ctx: RequestContext, partitions: list[tuple[str, int]]) -> OffsetDeleteRequest:
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
            merged = with_unknown(self.named_partitions(ctx), sent, [(t.name, t.partitions) for t in response.topics])
            response = replace(response, topics=tuple(TopicPartitionErrors(name, tuple(errors))
                                                      for name, errors in merged))
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

