"""Metadata: the catalog's topics, with this endpoint as the only broker (node 0) leading every partition."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from kafka.protocol.metadata import MetadataResponse

from groupcoord.protocol.errors import ErrorCode, Errors
from groupcoord.server.api import RequestContext
from groupcoord.server.topics import TopicSource

CLUSTER_ID = "groupcoord"
# Leader epochs are not tracked: -1 tells clients not to validate positions against them.
_UNKNOWN_LEADER_EPOCH = -1

_Topic = MetadataResponse.MetadataResponseTopic
_Partition = _Topic.MetadataResponsePartition


def requested_topics(body: Any, api_version: int) -> list[str] | None:
    """The topic names a Metadata request asks for; ``None`` means every topic.

    In v0 an empty list means every topic; from v1 on only a null list does.
    """
    if body.topics is None or (api_version == 0 and not body.topics):
        return None
    return [topic.name for topic in body.topics]


class MetadataAdapter:
    """Answers Metadata from ``topics``; topics it does not know get UNKNOWN_TOPIC_OR_PARTITION (no auto-creation)."""

    def __init__(self, topics: TopicSource) -> None:
        self._topics = topics

    async def handle(self, ctx: RequestContext) -> Any:
        """Describe the broker and the requested topics."""
        counts = await asyncio.to_thread(self._topics.partition_counts)
        names = requested_topics(ctx.body, ctx.api_version)
        wanted = sorted(counts) if names is None else names
        return self._response(ctx, [self._topic(ctx, name, counts) for name in wanted])

    def error_response(self, ctx: RequestContext, error: ErrorCode) -> Any:
        """Every requested topic with ``error`` (an all-topics request lists none)."""
        names = requested_topics(ctx.body, ctx.api_version) or []
        return self._response(ctx, [_error_topic(name, error) for name in names])

    def _response(self, ctx: RequestContext, topics: list[Any]) -> Any:
        broker = MetadataResponse.MetadataResponseBroker(
            node_id=ctx.broker.node_id, host=ctx.broker.host, port=ctx.broker.port, rack=None
        )
        return ctx.response(
            throttle_time_ms=0,
            brokers=[broker],
            cluster_id=CLUSTER_ID,
            controller_id=ctx.broker.node_id,
            topics=topics,
        )

    @staticmethod
    def _topic(ctx: RequestContext, name: str, counts: Mapping[str, int]) -> Any:
        count = counts.get(name)
        if count is None:
            return _error_topic(name, Errors.UNKNOWN_TOPIC_OR_PARTITION)
        node = ctx.broker.node_id
        partitions = [
            _Partition(
                error_code=Errors.NONE.code,
                partition_index=index,
                leader_id=node,
                leader_epoch=_UNKNOWN_LEADER_EPOCH,
                replica_nodes=[node],
                isr_nodes=[node],
                offline_replicas=[],
            )
            for index in range(count)
        ]
        return _Topic(
            error_code=Errors.NONE.code,
            name=name,
            is_internal=False,
            partitions=partitions,
        )


def _error_topic(name: str, error: ErrorCode) -> Any:
    return _Topic(
        error_code=error.code,
        name=name,
        is_internal=False,
        partitions=[],
    )
