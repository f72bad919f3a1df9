"""OffsetCommit v2-v10 on the wire <-> the core's OffsetCommitRequest.

Bodies are the schema codec's dicts (:mod:`groupcoord.server.schema_apis`): v10 names topics by id, past
kafka-python's classes. A null metadata string is stored as empty, as Kafka does; ``RetentionTimeMs`` exists in v2-v4
only. Partitions that do not exist (with ``screen_names``, or always for a topic named by id) get
UNKNOWN_TOPIC_OR_PARTITION, and ids that name no topic UNKNOWN_TOPIC_ID; neither reaches the core, and a request left
with nothing is not submitted at all (Kafka's broker does both).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.named_tuples import from_rows
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


_PARTITION_FIELDS = operator.itemgetter("PartitionIndex", "CommittedOffset", "CommittedLeaderEpoch",
                                        "CommittedMetadata")
_partition_of_row = from_rows(OffsetCommitPartition)


def _partitions(wire: list[dict[str, Any]]) -> tuple[OffsetCommitPartition, ...]:
    """The core's partitions of a request topic's wire partitions (a null metadata as empty), built without a
    Python call per partition."""
    partitions = tuple(map(_partition_of_row, map(_PARTITION_FIELDS, wire)))
    if any(p.metadata is None for p in partitions):
        return tuple(p._replace(metadata="") if p.metadata is None else p for p in partitions)
    return partitions


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
        """The partitions whose existence decides where they go (topics named by id always): of each such request
        topic its lowest and its highest partition, since a topic's partitions are 0 to its count less one, so
        all between exist when those two do."""
        checked: list[TopicPartitionKey] = []
        for topic in ctx.body["Topics"]:
            ref = topic_ref(ctx, topic)
            if self._screens(ref) and topic["Partitions"]:
                indexes = [p["PartitionIndex"] for p in topic["Partitions"]]
                checked += [(ref, min(indexes)), (ref, max(indexes))]
        return checked

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

    def _requested(self, ctx: RequestContext, keep: Callable[[TopicRef, int], bool]) -> OffsetCommitRequest:
        """The core request of the partitions ``keep`` keeps: of a topic, those of one interval of indexes."""
        body = ctx.body
        topics: list[OffsetCommitTopic] = []
        for topic in body["Topics"]:
            ref = topic_ref(ctx, topic)
            partitions = _partitions(topic["Partitions"])
            if partitions and not (keep(ref, min(p.partition for p in partitions))
                                   and keep(ref, max(p.partition for p in partitions))):
                partitions = tuple(p for p in partitions if keep(ref, p.partition))
            # else the usual case, decided once per topic: its lowest and highest partitions are kept, so all are
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
        wire_topics = [topic_ref(ctx, topic) for topic in ctx.body["Topics"]]
        refs = {self._known.name(topic): topic for topic in wire_topics}
        sent: list[OffsetCommitTopic] = []
        answered: list[tuple[TopicRef, Sequence[PartitionError]]] = []
        for request, outcome in zip(requests, outcomes, strict=True):
            assert isinstance(request, OffsetCommitRequest)
            sent += request.topics
            if isinstance(outcome, ErrorCode):
                answered += [(refs[t.name], [PartitionError(p.partition, outcome) for p in t.partitions])
                             for t in request.topics]
            else:
                answered += [(refs[t.name], t.partitions) for t in outcome.topics]
        # Every named partition sent (the usual case): nothing to screen out, so no need to match them one by one.
        if sum(len(t.partitions) for t in sent) == sum(len(topic["Partitions"]) for topic in ctx.body["Topics"]):
            named: list[TopicPartitionKey] = []
            sent_partitions: list[TopicPartitionKey] = []
        else:
            named = self.named_partitions(ctx)
            sent_partitions = [(refs[t.name], p.partition) for t in sent for p in t.partitions]
        missing = {topic: self._known.missing_error(topic) for topic in wire_topics}
        return ctx.response(
            ThrottleTimeMs=0,
            Topics=[{**wire_topic(ctx, topic),
                     "Partitions": [{"PartitionIndex": index, "ErrorCode": error.code} for index, error in partitions]}
                    for topic, partitions in with_unknown(named, sent_partitions, answered, missing)],
        )


__all__ = ["TOPIC_ID_VERSION", "OffsetCommitMapping", "topic_ref", "wire_topic"]
