"""OffsetFetch v1-v10 on the wire <-> the core's OffsetFetchRequest.

v8+ asks for several groups at once: each group is its own core request and its own outcome. A null topic list (v2+)
asks for every committed offset of the group. v10 names topics by id: an id that names no topic gets
UNKNOWN_TOPIC_ID on each of its partitions, and a v10 answer for every topic lists only topics that have an id. As in
Kafka, a group-level error in v8+ comes with no topics; before v8 it comes with every requested partition, and v1, which
has no top-level error, reports it on each of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from groupcoord.protocol.errors import ErrorCode, Errors
from groupcoord.protocol.requests import GroupRequest, OffsetFetchRequest, OffsetFetchTopic
from groupcoord.protocol.responses import OffsetFetchPartition, OffsetFetchResponse, OffsetFetchTopicResponse
from groupcoord.runtime.service import CoordinatorService
from groupcoord.server.adapters.core import CoreAdapter, Outcome
from groupcoord.server.adapters.known_partitions import KnownTopics, TopicPartitionKey
from groupcoord.server.adapters.offset_commit import TOPIC_ID_VERSION, topic_ref, wire_topic
from groupcoord.server.api import RequestContext

_NO_OFFSET = -1
_FIRST_BATCHED_VERSION = 8


class OffsetFetchMapping:
    """OffsetFetch v1-v10 (see the module)."""

    def __init__(self, known: KnownTopics) -> None:
        self._known = known

    def checked_partitions(self, ctx: RequestContext) -> list[TopicPartitionKey]:
        """The partitions of topics named by id (v10), which must be resolved to names."""
        if ctx.api_version < TOPIC_ID_VERSION:
            return []
        return [(topic["TopicId"], p) for group in ctx.body["Groups"] for topic in group["Topics"] or ()
                for p in topic["PartitionIndexes"]]

    def to_core(self, ctx: RequestContext) -> Sequence[GroupRequest]:
        """One core OffsetFetchRequest per group."""
        body = ctx.body
        if ctx.api_version < _FIRST_BATCHED_VERSION:
            return [OffsetFetchRequest(group_id=body["GroupId"], topics=self._topics(ctx, body["Topics"]),
                                       require_stable=body["RequireStable"])]
        return [
            OffsetFetchRequest(group_id=group["GroupId"], topics=self._topics(ctx, group["Topics"]),
                               member_id=group["MemberId"], member_epoch=group["MemberEpoch"],
                               require_stable=body["RequireStable"])
            for group in body["Groups"]
        ]

    def _topics(self, ctx: RequestContext, topics: list[dict[str, Any]] | None) -> tuple[OffsetFetchTopic, ...] | None:
        if topics is None:
            return None
        named = ((self._known.name(topic_ref(ctx, topic)), topic["PartitionIndexes"]) for topic in topics)
        return tuple(OffsetFetchTopic(name, tuple(partitions)) for name, partitions in named if name is not None)

    def answered_topics(self, outcomes: Sequence[Outcome]) -> list[str]:
        """The names of the topics the outcomes hold offsets of."""
        return [topic.name for outcome in outcomes if isinstance(outcome, OffsetFetchResponse)
                for topic in outcome.topics]

    def to_wire(self, ctx: RequestContext, requests: Sequence[GroupRequest], outcomes: Sequence[Outcome]) -> Any:
        """The single-group layout before v8, one entry per group from v8."""
        responses = [_fetch_response(request, outcome) for request, outcome in zip(requests, outcomes, strict=True)]
        if ctx.api_version < _FIRST_BATCHED_VERSION:
            (response,) = responses
            if ctx.api_version < 2 and response.error is not Errors.NONE:
                response = _fetch_response(requests[0], response.error)
            return ctx.response(ThrottleTimeMs=0, ErrorCode=response.error.code,
                                Topics=[_wire_topic({"Name": topic.name}, topic.partitions)
                                        for topic in response.topics])
        groups = ctx.body["Groups"]
        return ctx.response(ThrottleTimeMs=0, Groups=[
            {"GroupId": group["GroupId"], "ErrorCode": response.error.code,
             "Topics": [] if response.error is not Errors.NONE else self._group_topics(ctx, group, response)}
            for group, response in zip(groups, responses, strict=True)
        ])

    def _group_topics(self, ctx: RequestContext, group: dict[str, Any],
                      response: OffsetFetchResponse) -> list[dict[str, Any]]:
        if ctx.api_version < TOPIC_ID_VERSION:
            return [_wire_topic({"Name": topic.name}, topic.partitions) for topic in response.topics]
        if group["Topics"] is None:
            return [_wire_topic({"Name": "", "TopicId": topic_id}, topic.partitions) for topic in response.topics
                    if (topic_id := self._known.topic_id(topic.name)) is not None]
        answers = {topic.name: topic.partitions for topic in response.topics}
        wire: list[dict[str, Any]] = []
        for topic in group["Topics"]:
            name = self._known.name(topic["TopicId"])
            partitions = answers.get(name, ()) if name is not None else tuple(
                OffsetFetchPartition(p, _NO_OFFSET, error=Errors.UNKNOWN_TOPIC_ID) for p in topic["PartitionIndexes"])
            wire.append(_wire_topic(wire_topic(ctx, topic["TopicId"]), partitions))
        return wire


class OffsetFetchAdapter(CoreAdapter):
    """OffsetFetch through a :class:`CoordinatorService`, with the topic ids of v10 brought up to date before the
    request names them by id and before an answer gives them."""

    def __init__(self, service: CoordinatorService, known: KnownTopics) -> None:
        self._fetch = OffsetFetchMapping(known)
        super().__init__(service, self._fetch)
        self._known = known

    async def handle(self, ctx: RequestContext) -> Any:
        """Resolve the ids the request names, fetch, learn the ids of the topics answered, answer."""
        await self._known.learn(self._fetch.checked_partitions(ctx))
        requests = self._fetch.to_core(ctx)
        outcomes = await self.submit_all(requests)
        if ctx.api_version >= TOPIC_ID_VERSION:
            await self._known.learn_ids(self._fetch.answered_topics(outcomes))
        return self._fetch.to_wire(ctx, requests, outcomes)


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


def _wire_topic(identity: dict[str, Any], partitions: Sequence[OffsetFetchPartition]) -> dict[str, Any]:
    return {**identity, "Partitions": [
        {"PartitionIndex": p.partition, "CommittedOffset": p.offset, "CommittedLeaderEpoch": p.leader_epoch,
         "Metadata": p.metadata, "ErrorCode": p.error.code} for p in partitions]}


__all__ = ["OffsetFetchAdapter", "OffsetFetchMapping"]
