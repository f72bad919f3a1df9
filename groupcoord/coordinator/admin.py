"""DescribeGroups, ListGroups and DeleteGroups, and the topic-metadata entry point (seed 000).

Consumer groups (KIP-848) show as Kafka 4.4 shows them: DescribeGroups answers GROUP_ID_NOT_FOUND ("Group g is not a
classic group."; ConsumerGroupDescribe describes them); ListGroups lists them with group type ``consumer``, protocol
type ``consumer`` and their state (Empty, Assigning, Reconciling, Stable), and its type filter is the group type;
DeleteGroups deletes an empty one with its offsets. An empty group id is a group that does not exist to DescribeGroups
and DeleteGroups, as in Kafka 4.4 (ConsumerGroupDescribe answers it INVALID_GROUP_ID).
"""

from __future__ import annotations

from collections.abc import Mapping

from groupcoord.coordinator import rebalance
from groupcoord.coordinator.consumer_membership import delete_consumer_group
from groupcoord.coordinator.context import CoordinatorContext
from groupcoord.coordinator.coverage import assigns_exactly, misses_partitions
from groupcoord.coordinator.records import new_group_tombstone, new_offset_tombstone
from groupcoord.group.consumer_group import ConsumerGroupState
from groupcoord.group.group import ClassicGroup
from groupcoord.group.member import Token
from groupcoord.group.state import GroupState
from groupcoord.protocol.errors import Errors, ProtocolError
from groupcoord.protocol.requests import DeleteGroupsRequest, DescribeGroupsRequest, ListGroupsRequest
from groupcoord.protocol.responses import (
    DeletedGroup,
    DeleteGroupsResponse,
    DescribedGroup,
    DescribedMember,
    DescribeGroupsResponse,
    ListedGroup,
    ListGroupsResponse,
)

_S = GroupState


def describe_group(ctx: CoordinatorContext, group_id: str) -> DescribedGroup:
    """One group as DescribeGroups shows it: protocol and member metadata only while Stable; each member's last
    assignment in every state (cleared when a rebalance restarts the sync phase), as in Kafka."""
    if ctx.hard.consumer_group(group_id) is not None:
        return DescribedGroup(error=Errors.GROUP_ID_NOT_FOUND, group_id=group_id, state=_S.DEAD.value,
                              error_message=f"Group {group_id} is not a classic group.")
    group = ctx.groups.get(group_id)
    if group is None or group.is_in(_S.DEAD):
        return DescribedGroup(error=Errors.GROUP_ID_NOT_FOUND, group_id=group_id, state=_S.DEAD.value)
    stable = group.is_in(_S.STABLE)
    members = tuple(
        DescribedMember(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                        m.metadata(group.protocol_name) if stable and group.protocol_name else b"",
                        m.assignment)
        for m in group.members.values())
    return DescribedGroup(error=Errors.NONE, group_id=group_id, state=group.state.value,
                          protocol_type=group.protocol_type or "",
                          protocol=(group.protocol_name or "") if stable else "", members=members)


def handle_describe(ctx: CoordinatorContext, request: DescribeGroupsRequest, now_ms: int, token: Token) -> None:
    """Describe each requested group."""
    ctx.respond(token, DescribeGroupsResponse(groups=tuple(describe_group(ctx, g) for g in request.groups)))


CLASSIC_GROUP_TYPE = "classic"
"""The group type of a classic group in ListGroups (v5)."""

CONSUMER_GROUP_TYPE = "consumer"
"""The group type of a consumer group (KIP-848) in ListGroups (v5); also its protocol type, as in Kafka."""

_STATE_NAMES = frozenset(s.value.lower() for s in GroupState) | frozenset(s.value.lower() for s in ConsumerGroupState)


def handle_list(ctx: CoordinatorContext, request: ListGroupsRequest, now_ms: int, token: Token) -> None:
    """Groups of both types (sorted by id), optionally only those in the named states and of the named group
    types (both case-insensitive, as in Kafka)."""
    states = {name.strip().lower() for name in request.states_filter}
    if not states <= _STATE_NAMES:
        raise ProtocolError(Errors.INVALID_REQUEST, f"unknown state in {list(request.states_filter)}")
    types = {name.strip().lower() for name in request.types_filter}
    listed = [
        ListedGroup(g.group_id, g.protocol_type or "", g.state.value, CLASSIC_GROUP_TYPE)
        for g in ctx.groups.values() if not g.is_in(_S.DEAD)]
    for group_id in ctx.hard.consumer_group_ids():
        group = ctx.hard.consumer_group(group_id)
        assert group is not None
        listed.append(ListedGroup(group_id, CONSUMER_GROUP_TYPE, group.state.value, CONSUMER_GROUP_TYPE))
    ctx.respond(token, ListGroupsResponse(error=Errors.NONE, groups=tuple(
        g for g in sorted(listed, key=lambda g: g.group_id)
        if (not states or g.state.lower() in states) and (not types or g.group_type in types))))


def handle_delete(ctx: CoordinatorContext, request: DeleteGroupsRequest, now_ms: int, token: Token) -> None:
    """Delete each Empty group and its offsets; NON_EMPTY_GROUP for groups with members."""
    results = []
    for group_id in request.groups:
        group = ctx.groups.get(group_id)
        consumer_group = ctx.hard.consumer_group(group_id)
        if consumer_group is not None:
            error = Errors.NON_EMPTY_GROUP if consumer_group.members else Errors.NONE
            if not error.is_error:
                delete_consumer_group(ctx, consumer_group, with_offsets=True)
        elif group is None or group.is_in(_S.DEAD):
            error = Errors.GROUP_ID_NOT_FOUND
        elif not group.is_in(_S.EMPTY):
            error = Errors.NON_EMPTY_GROUP
        else:
            delete_group(ctx, group, now_ms)
            error = Errors.NONE
        results.append(DeletedGroup(group_id, error))
    ctx.respond(token, DeleteGroupsResponse(results=tuple(results)))


def delete_group(ctx: CoordinatorContext, group: ClassicGroup, now_ms: int) -> None:
    """Tombstone an Empty group's offsets and metadata and forget it."""
    for topic, partition in sorted(ctx.hard.offsets(group.group_id)):
        ctx.append(new_offset_tombstone(group.group_id, topic, partition))
    group.transition_to(_S.DEAD, now_ms)
    ctx.append(new_group_tombstone(group.group_id))
    ctx.forget_group(group)


def on_metadata_change(ctx: CoordinatorContext, partition_counts: Mapping[str, int], now_ms: int) -> None:
    """Rebalance every Stable group subscribed to a topic whose partition count changed (seed 000), unless its
    assignment already gives out exactly the partitions counted now.

    ``partition_counts`` is a complete snapshot; a topic missing from it is gone. The first snapshot only
    records the counts: there is nothing to compare it with.
    """
    previous = ctx.partition_counts
    ctx.partition_counts = dict(partition_counts)
    if previous is None:
        # Nothing to compare with (a new coordinator after a failover), yet a rebalance for a change may have been
        # lost with the old one: rebalance the Stable groups whose assignment misses partitions of a topic it assigns.
        for group_id in sorted(ctx.groups):
            group = ctx.groups[group_id]
            if group.is_in(_S.STABLE) and misses_partitions(group, partition_counts):
                rebalance.prepare_rebalance(ctx, group, now_ms, "its assignment misses partitions of its topics")
        return
    changed = {t for t in set(previous) | set(partition_counts) if previous.get(t) != partition_counts.get(t)}
    for group_id in sorted(ctx.groups):
        group = ctx.groups[group_id]
        topics = (group.subscribed_topics or frozenset()) & changed
        if group.is_in(_S.STABLE) and topics and not assigns_exactly(group, topics, partition_counts):
            rebalance.prepare_rebalance(ctx, group, now_ms, f"partitions changed for {sorted(topics)}")
