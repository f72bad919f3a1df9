"""OffsetCommit v2-v10 on the wire <-> the core's OffsetCommitRequest.

Bodies are the schema codec's dicts (:mod:`groupcoord.server.schema_apis`): v10 names topics by id, past
kafka-python's classes. A null metadata string is stored as empty, as Kafka does; ``RetentionTimeMs`` exists in v2-v4
only. Partitions that do not exist (with ``screen_names``, or always for a topic named by id) get
UNKNOWN_TOPIC_OR_PARTITION, and ids that name no topic UNKNOWN_TOPIC_ID; neither reaches the core, and a request left
with nothing is not submitted at all (Kafka's broker does both).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.requests import GroupRequest, OffsetCommitPartition, OffsetCommitRequest, OffsetCommitTopic
from groupcoord.protocol.responses import PartitionError
from groupcoord.server.adapters.core import Outcome
from groupcoord.server.adapters.known_partitions import KnownTopics, TopicPartitionKey, TopicRef, with_unknown
from groupcoord.server.api import RequestContext

TOPIC_ID_VERSION = 10
"""The first OffsetCommit (and OffsetFetch) version that names topics by id."""


def topic_ref(ctx: RequestContext, topic: dict[str, Any]) -> TopicRef:
    """How a request topic of OffsetCommit or OffsetFetch is named at the request's version: its id from v10."""
    ref: TopicRef = topic["TopicId"] if ctx.api_version >= TOPIC_ID_VERSION else topic["Name"]
    return ref


def wire_topic(ctx: RequestContext, topic: TopicRef) -> dict[str, Any]:
    """A response topic's ``Name``/``TopicId`` for ``topic`` (a name, or an id the request gave)."""
    if ctx.api_version < TOPIC_ID_VERSION:
        return {"Name": topic}
    return {"Name": "", "TopicId": topic}


class OffsetCommitMapping:
    """OffsetCommit v2-v10 (see the module)."""

    def __init__(self, known: KnownTopics, *, screen_names: bool = True) -> None:
        self._known = known
        self._screen_names = screen_names

    def named_partitions(self, ctx: RequestContext) -> list[TopicPartitionKey]:
        """Every partition the request commits, its topic as the request names it."""
        return [(topic_ref(ctx, topic), p["PartitionIndex"]) for topic in ctx.body["Topics"]
                for p in topic["Partitions"]]

    def checked_partitions(self, ctx: RequestContext) -> list[TopicPartitionKey]:
        """The partitions whose existence decides where they go (topics named by id always)."""
        return [(topic, partition) for topic, partition in self.named_partitions(ctx) if self._screens(topic)]

    def unscreened(self, ctx: RequestContext) -> Sequence[GroupRequest]:
        """One core OffsetCommitRequest of every partition of a topic that has a name."""
        return [self._requested(ctx, lambda topic, partition: self._known.name(topic) is not None)]

    def to_core(self, ctx: RequestContext) -> Sequence[GroupRequest]:
        """One core OffsetCommitRequest of the partitions that exist (none when no partition exists)."""
        request = self._requested(ctx, lambda topic, partition: not self._screens(topic)
                                  or self._known.exists(topic, partition))
        return [request] if request.topics else []

    def _screens(self, topic: TopicRef) -> bool:
        return self._screen_names or not isinstance(topic, str)

    def _requested(self, ctx: RequestContext, keep: Any) -> OffsetCommitRequest:
        body = ctx.body
        topics: list[OffsetCommitTopic] = []
        for topic in body["Topics"]:
            ref = topic_ref(ctx, topic)
            partitions = tuple(
                OffsetCommitPartition(partition=p["PartitionIndex"], offset=p["CommittedOffset"],
                                      leader_epoch=p["CommittedLeaderEpoch"], metadata=p["CommittedMetadata"] or "")
                for p in topic["Partitions"] if keep(ref, p["PartitionIndex"]))
            name = self._known.name(ref)
            if partitions and name is not None:
                topics.append(OffsetCommitTopic(name, partitions))
        return OffsetCommitRequest(
            group_id=body["GroupId"],
            generation_id=body["GenerationIdOrMemberEpoch"],
            member_id=body["MemberId"],
            group_instance_id=body["GroupInstanceId"],
            retention_time_ms=body["RetentionTimeMs"],
            topics=tuple(topics),
            api_version=ctx.api_version,
        )

    def to_wire(self, ctx: RequestContext, requests: Sequence[GroupRequest], outcomes: Sequence[Outcome]) -> Any:
        """An error per partition (a failed request gives every submitted partition its error)."""
        named = self.named_partitions(ctx)
        refs = {self._known.name(topic): topic for topic, _ in named}
        sent: list[TopicPartitionKey] = []
        answered: list[tuple[TopicRef, Sequence[PartitionError]]] = []
        for request, outcome in zip(requests, outcomes, strict=True):
            assert isinstance(request, OffsetCommitRequest)
            sent += [(refs[t.name], p.partition) for t in request.topics for p in t.partitions]
            if isinstance(outcome, ErrorCode):
                answered += [(refs[t.name], [PartitionError(p.partition, outcome) for p in t.partitions])
                             for t in request.topics]
            else:
                answered += [(refs[t.name], t.partitions) for t in outcome.topics]
        missing = {topic: self._known.missing_error(topic) for topic, _ in named}
        return ctx.response(
            ThrottleTimeMs=0,
            Topics=[{**wire_topic(ctx, topic),
                     "Partitions": [{"PartitionIndex": p.partition, "ErrorCode": p.error.code} for p in partitions]}
                    for topic, partitions in with_unknown(named, sent, answered, missing)],
        )


__all__ = ["TOPIC_ID_VERSION", "OffsetCommitMapping", "topic_ref", "wire_topic"]
