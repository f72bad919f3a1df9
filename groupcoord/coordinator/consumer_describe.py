"""ConsumerGroupDescribe (KIP-848): each consumer group with its epochs, server assignor, members and assignments.

As Kafka 4.4 answers it: a group that does not exist, or is a classic group, gets GROUP_ID_NOT_FOUND with Kafka's
message ("Group g not found." / "Group g is not a consumer group."); an empty group id INVALID_GROUP_ID. A
member's ``assignment`` is what it is assigned now (not what it has still to revoke, as in Kafka) and its
``target_assignment`` the group's target for it. Topics are named by id, with the names the coordinator's last
metadata snapshot gives them.
"""

from __future__ import annotations

from groupcoord.coordinator.consumer_membership import server_assignor
from groupcoord.coordinator.context import CoordinatorContext
from groupcoord.group.consumer_group import ConsumerGroup
from groupcoord.group.consumer_member import ConsumerGroupMember
from groupcoord.group.member import Token
from groupcoord.group.state import GroupState
from groupcoord.protocol.errors import Errors
from groupcoord.protocol.requests import ConsumerGroupDescribeRequest
from groupcoord.protocol.responses import (
    ConsumerGroupDescribeResponse,
    DescribedConsumerGroup,
    DescribedConsumerMember,
)


def describe_consumer_group(ctx: CoordinatorContext, group_id: str) -> DescribedConsumerGroup:
    """One group as ConsumerGroupDescribe shows it (see the module docs)."""
    if not group_id:
        return DescribedConsumerGroup(error=Errors.INVALID_GROUP_ID, group_id=group_id)
    group = ctx.hard.consumer_group(group_id)
    if group is None:
        classic = ctx.groups.get(group_id)
        classic_live = classic is not None and not classic.is_in(GroupState.DEAD)
        message = f"Group {group_id} is not a consumer group." if classic_live else f"Group {group_id} not found."
        return DescribedConsumerGroup(error=Errors.GROUP_ID_NOT_FOUND, group_id=group_id, error_message=message)
    names = {topic_id: name for name, topic_id in ctx.topic_ids.items()}
    return DescribedConsumerGroup(
        error=Errors.NONE, group_id=group_id, state=group.state.value, group_epoch=group.group_epoch,
        assignment_epoch=group.target_assignment_epoch, assignor_name=server_assignor(ctx, group),
        members=tuple(_member(group, member) for _, member in sorted(group.members.items())),
        topic_names=names)


def _member(group: ConsumerGroup, member: ConsumerGroupMember) -> DescribedConsumerMember:
    return DescribedConsumerMember(
        member_id=member.member_id, instance_id=member.instance_id, rack_id=member.rack_id,
        member_epoch=member.member_epoch, client_id=member.client_id, client_host=member.client_host,
        subscribed_topic_names=tuple(sorted(member.subscribed_topic_names)),
        subscribed_topic_regex=member.subscribed_topic_regex or None,
        assignment=dict(member.assigned_partitions),
        target_assignment=dict(group.target_assignment_of(member.member_id)),
        uses_classic_protocol=member.uses_classic_protocol)


def handle_consumer_describe(ctx: CoordinatorContext, request: ConsumerGroupDescribeRequest, now_ms: int,
                             token: Token) -> None:
    """Describe each requested group."""
    ctx.respond(token, ConsumerGroupDescribeResponse(
        groups=tuple(describe_consumer_group(ctx, group_id) for group_id in request.groups)))
