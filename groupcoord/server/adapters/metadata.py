"""Metadata: the catalog's topics, with this endpoint as the only broker (node 0) leading every partition.

From v10 each topic carries its id (the catalog's UUID, kept for the topic's life): the consumer group protocol
(KIP-848) names topics by id, and clients map them back through Metadata.
"""

from __future__ import annotations

import asyncio
import uuid
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


_ZERO_UUID = uuid.UUID(int=0)

TopicKey = str | uuid.UUID
"""A requested topic: by name, or (v10+, a null name) by id."""


def requested_topics(body: Any, api_version: int) -> list[TopicKey] | None:
    """The topics a Metadata request asks for, by name or by id; ``None`` means every topic.

    In v0 an empty list means every topic; from v1 on only a null list does. From v10 an entry may name its topic
    by id instead (the consumer group protocol's clients look up the ids of their assignment so): as Kafka reads it,
    an entry with a non-zero id asks by id, whatever its name says (Kafka's Java consumer sends ``""`` beside the id,
    librdkafka a null).
    """
    if body.topics is None or (api_version == 0 and not body.topics):
        return None
    return [topic.topic_id if api_version >= 10 and topic.topic_id not in (None, _ZERO_UUID) else topic.name
            for topic in body.topics]


class MetadataAdapter:
    """Answers Metadata from ``topics``; topics it does not know get UNKNOWN_TOPIC_OR_PARTITION (no auto-creation)."""

    def __init__(self, topics: TopicSource) -> None:
        self._topics = topics

    async def handle(self, ctx: RequestContext) -> Any:
        """Describe the broker and the requested topics."""
        counts, ids = await asyncio.to_thread(lambda: (self._topics.partition_counts(), self._topics.topic_ids()))
        keys = requested_topics(ctx.body, ctx.api_version)
        names = {topic_id: name for name, topic_id in ids.items()}
        wanted = sorted(counts) if keys is None else keys
        return self._response(ctx, [
            self._topic(ctx, key, counts, ids) if isinstance(key, str)
            else self._topic(ctx, names[key], counts, ids) if key in names
            else _error_topic(None, Errors.UNKNOWN_TOPIC_ID, key)
            for key in wanted])

    def error_response(self, ctx: RequestContext, error: ErrorCode) -> Any:
        """Every requested topic with ``error`` (an all-topics request lists none)."""
        keys = requested_topics(ctx.body, ctx.api_version) or []
        return self._response(ctx, [
            _error_topic(key, error) if isinstance(key, str) else _error_topic(None, error, key) for key in keys])

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
    def _topic(ctx: RequestContext, name: str, counts: Mapping[str, int], ids: Mapping[str, uuid.UUID]) -> Any:
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
            topic_id=ids.get(name),
            is_internal=False,
            partitions=partitions,
        )


def _error_topic(name: str | None, error: ErrorCode, topic_id: uuid.UUID | None = None) -> Any:
    return _Topic(
        error_code=error.code,
        name=name,
        topic_id=topic_id,
        is_internal=False,
        partitions=[],
    )
