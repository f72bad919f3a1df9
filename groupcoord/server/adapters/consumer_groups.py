"""The consumer group protocol (KIP-848) on the wire: ConsumerGroupHeartbeat and ConsumerGroupDescribe <-> the core's
frozen types.

Bodies are the schema codec's dicts (:mod:`groupcoord.server.schema_apis`): kafka-python has no classes for these
APIs. Topics are named by id on the wire, as in the core.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

from groupcoord.protocol.requests import ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest, GroupRequest
from groupcoord.protocol.responses import (
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatResponse,
    DescribedConsumerGroup,
    DescribedConsumerMember,
)
from groupcoord.server.adapters.core import Outcome
from groupcoord.server.adapters.groups import single
from groupcoord.server.api import RequestContext

CONSUMER_MEMBER_TYPE = 1
"""ConsumerGroupDescribe v1's ``MemberType`` of a member that speaks the consumer protocol."""
CLASSIC_MEMBER_TYPE = 0
"""ConsumerGroupDescribe v1's ``MemberType`` of a member of the classic protocol in a consumer group."""
UNKNOWN_AUTHORIZED_OPERATIONS = -(2**31)
"""``AuthorizedOperations`` when they were not asked for (or not known)."""


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


class ConsumerGroupDescribeMapping:
    """ConsumerGroupDescribe v0-v1 (v1 adds each member's ``MemberType``)."""

    def to_core(self, ctx: RequestContext) -> Sequence[GroupRequest]:
        """One core ConsumerGroupDescribeRequest for every requested group."""
        return [ConsumerGroupDescribeRequest(groups=tuple(ctx.body["GroupIds"]))]

    def to_wire(self, ctx: RequestContext, requests: Sequence[GroupRequest], outcomes: Sequence[Outcome]) -> Any:
        """Each group, its members and their assignments, topics by id and name."""
        (request,) = requests
        assert isinstance(request, ConsumerGroupDescribeRequest)
        response: ConsumerGroupDescribeResponse = single(outcomes, lambda error: ConsumerGroupDescribeResponse(
            groups=tuple(DescribedConsumerGroup(error=error, group_id=g) for g in request.groups)))
        return ctx.response(ThrottleTimeMs=0, Groups=[_described_group(g, ctx.api_version) for g in response.groups])


def _described_group(group: DescribedConsumerGroup, api_version: int) -> dict[str, Any]:
    return {
        "ErrorCode": group.error.code, "ErrorMessage": group.error_message, "GroupId": group.group_id,
        "GroupState": group.state, "GroupEpoch": group.group_epoch, "AssignmentEpoch": group.assignment_epoch,
        "AssignorName": group.assignor_name,
        "Members": [_described_member(m, group.topic_names, api_version) for m in group.members],
        "AuthorizedOperations": UNKNOWN_AUTHORIZED_OPERATIONS,
    }


def _described_member(member: DescribedConsumerMember, names: Mapping[UUID, str], api_version: int) -> dict[str, Any]:
    described = {
        "MemberId": member.member_id, "InstanceId": member.instance_id, "RackId": member.rack_id,
        "MemberEpoch": member.member_epoch, "ClientId": member.client_id, "ClientHost": member.client_host,
        "SubscribedTopicNames": list(member.subscribed_topic_names),
        "SubscribedTopicRegex": member.subscribed_topic_regex or "",  # Kafka's answer without a regex
        "Assignment": {"TopicPartitions": _named(member.assignment, names)},
        "TargetAssignment": {"TopicPartitions": _named(member.target_assignment, names)},
    }
    if api_version >= 1:
        described["MemberType"] = CLASSIC_MEMBER_TYPE if member.uses_classic_protocol else CONSUMER_MEMBER_TYPE
    return described


def _named(partitions: Mapping[UUID, frozenset[int]], names: Mapping[UUID, str]) -> list[dict[str, Any]]:
    """Partitions by topic id with each topic's name (empty for an id the coordinator no longer knows)."""
    return [{**entry, "TopicName": names.get(entry["TopicId"], "")} for entry in wire_partitions(partitions)]
