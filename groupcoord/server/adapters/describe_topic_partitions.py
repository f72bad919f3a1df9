"""DescribeTopicPartitions (KIP-966) v0: the topics and partitions Metadata would give, paged by a cursor.

Kafka 4's admin client describes topics with it (``kafka-topics --describe``). Every partition is led by this
endpoint (node 0), its only replica and ISR; groupcoord has no eligible leader replicas, so both ELR lists are
empty, as a broker without ELR reports them. The topics are the requested ones (all of them when none is named),
sorted by name; a page holds at most ``ResponsePartitionLimit`` partitions (and at most Kafka's default of 2,000),
and ``NextCursor`` names where the next page starts.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping
from typing import Any

from groupcoord.protocol.errors import ErrorCode, Errors
from groupcoord.server.api import RequestContext
from groupcoord.server.topics import TopicSource

MAX_PARTITIONS_PER_PAGE = 2000
"""Kafka's ``max.request.partition.size.limit`` default: a page never holds more partitions."""
UNKNOWN_AUTHORIZED_OPERATIONS = -(2**31)
NO_TOPIC_ID = uuid.UUID(int=0)
"""The id of a topic that does not exist (Kafka's ``Uuid.ZERO_UUID``)."""


class DescribeTopicPartitionsAdapter:
    """Answers DescribeTopicPartitions from ``topics``."""

    def __init__(self, topics: TopicSource) -> None:
        self._topics = topics

    async def handle(self, ctx: RequestContext) -> Any:
        """One page of the requested topics' partitions."""
        counts, ids = await asyncio.to_thread(lambda: (self._topics.partition_counts(), self._topics.topic_ids()))
        body = ctx.body
        names = sorted({t["Name"] for t in body["Topics"]}) if body["Topics"] else sorted(counts)
        cursor = body["Cursor"]
        if cursor is not None:
            names = [name for name in names if name >= cursor["TopicName"]]
        budget = max(1, min(body["ResponsePartitionLimit"], MAX_PARTITIONS_PER_PAGE))
        described: list[dict[str, Any]] = []
        next_cursor = None
        for name in names:
            count = counts.get(name)
            if count is None:
                described.append(_topic(name, Errors.UNKNOWN_TOPIC_OR_PARTITION, ids, []))
                continue
            first = cursor["PartitionIndex"] if cursor is not None and name == cursor["TopicName"] else 0
            if budget == 0:
                next_cursor = {"TopicName": name, "PartitionIndex": first}
                break
            last = min(count, first + budget)
            described.append(_topic(name, Errors.NONE, ids, [_partition(ctx.broker.node_id, p)
                                                              for p in range(first, last)]))
            budget -= last - first
            if last < count:
                next_cursor = {"TopicName": name, "PartitionIndex": last}
                break
        return ctx.response(ThrottleTimeMs=0, Topics=described, NextCursor=next_cursor)

    def error_response(self, ctx: RequestContext, error: ErrorCode) -> Any:
        """``error`` for every requested topic."""
        return ctx.response(ThrottleTimeMs=0, Topics=[_topic(t["Name"], error, {}, []) for t in ctx.body["Topics"]],
                            NextCursor=None)


def _topic(name: str, error: ErrorCode, ids: Mapping[str, Any], partitions: list[dict[str, Any]]) -> dict[str, Any]:
    return {"ErrorCode": error.code, "Name": name, "TopicId": ids.get(name, NO_TOPIC_ID), "IsInternal": False,
            "Partitions": partitions, "TopicAuthorizedOperations": UNKNOWN_AUTHORIZED_OPERATIONS}


def _partition(node: int, index: int) -> dict[str, Any]:
    return {"ErrorCode": Errors.NONE.code, "PartitionIndex": index, "LeaderId": node, "LeaderEpoch": -1,
            "ReplicaNodes": [node], "IsrNodes": [node], "EligibleLeaderReplicas": [], "LastKnownElr": [],
            "OfflineReplicas": []}
