"""The consumer group protocol (KIP-848) on the wire: ConsumerGroupHeartbeat <-> the core's frozen types.

Bodies are the schema codec's dicts (:mod:`groupcoord.server.schema_apis`): kafka-python has no classes for these
APIs. Topics are named by id on the wire, as in the core.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

from groupcoord.protocol.requests import ConsumerGroupHeartbeatRequest, GroupRequest
from groupcoord.protocol.responses import ConsumerGroupHeartbeatResponse
from groupcoord.server.adapters.core import Outcome
from groupcoord.server.adapters.groups import single
from groupcoord.server.api import RequestContext


def wire_partitions(partitions: Mapping[UUID, frozenset[int]] | Mapping[UUID, Any]) -> list[dict[str, Any]]:
    """Partitions by topic id as the wire's ``TopicPartitions`` entries (topics and partitions in order)."""
    return [{"TopicId": topic_id, "Partitions": sorted(ids)} for topic_id, ids in sorted(partitions.items())]


class ConsumerGroupHeartbeatMapping:
    """ConsumerGroupHeartbeat v0-v1 (v1 adds ``SubscribedTopicRegex``, and the client makes up its member id)."""

    def to_core(self, ctx: RequestContext) -> Sequence[GroupRequest]:
        """One core ConsumerGroupHeartbeatRequest."""
        body = ctx.body
        names = body["SubscribedTopicNames"]
        owned = body["TopicPartitions"]
        return [
            ConsumerGroupHeartbeatRequest(
                group_id=body["GroupId"],
                member_id=body["MemberId"],
                member_epoch=body["MemberEpoch"],
                instance_id=body["InstanceId"],
                rack_id=body["RackId"],
                rebalance_timeout_ms=body["RebalanceTimeoutMs"],
                subscribed_topic_names=None if names is None else tuple(names),
                subscribed_topic_regex=body.get("SubscribedTopicRegex"),
                server_assignor=body["ServerAssignor"],
                topic_partitions=None if owned is None else {
                    entry["TopicId"]: tuple(entry["Partitions"]) for entry in owned},
                api_version=ctx.api_version,
                client_id=ctx.client_id,
                client_host=ctx.client_host,
            )
        ]

    def to_wire(self, ctx: RequestContext, requests: Sequence[GroupRequest], outcomes: Sequence[Outcome]) -> Any:
        """The member's id, epoch, heartbeat interval and (when it changed) its assignment."""
        response: ConsumerGroupHeartbeatResponse = single(
            outcomes, lambda error: ConsumerGroupHeartbeatResponse(error=error))
        assignment = response.assignment
        return ctx.response(
            ThrottleTimeMs=0,
            ErrorCode=response.error.code,
            ErrorMessage=response.error_message,
            MemberId=response.member_id,
            MemberEpoch=response.member_epoch,
            HeartbeatIntervalMs=response.heartbeat_interval_ms,
            Assignment=None if assignment is None else {"TopicPartitions": wire_partitions(assignment)},
        )
