"""DescribeGroups, ListGroups, DeleteGroups, Heartbeat codes and LeaveGroup batches."""

from __future__ import annotations

from groupcoord.protocol import (
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    Errors,
    ListGroupsRequest,
    MemberIdentity,
    OffsetFetchRequest,
)

from .context import CoordinatorTestContext


def test_describe_shows_protocol_members_and_assignments_when_stable(ctx: CoordinatorTestContext) -> None:
    """A Stable group shows its protocol and each member's metadata and assignment."""
    (a, b), _ = ctx.stable_group("g", 2)
    (group,) = ctx.call(DescribeGroupsRequest(groups=("g",))).groups
    assert (group.error, group.state, group.protocol_type, group.protocol) == (Errors.NONE, "Stable", "consumer",
                                                                               "range")
    assert [m.member_id for m in group.members] == [a, b] and all(m.assignment for m in group.members)


def test_list_groups_filters_by_state(ctx: CoordinatorTestContext) -> None:
    """ListGroups with a state filter (KIP-518), case-insensitive."""
    ctx.stable_group("g", 1)
    ctx.commit("s", {("t", 0): 1})
    listed = ctx.call(ListGroupsRequest()).groups
    assert [(g.group_id, g.state) for g in listed] == [("g", "Stable"), ("s", "Empty")]
    assert [g.group_id for g in ctx.call(ListGroupsRequest(states_filter=("empty",))).groups] == ["s"]


def test_delete_groups_deletes_empty_group_and_its_offsets(ctx: CoordinatorTestContext) -> None:
    """DeleteGroups removes an Empty group with its offsets; a second delete is GROUP_ID_NOT_FOUND."""
    ctx.commit("s", {("t", 0): 1})
    (a,), _ = ctx.stable_group("g", 1)
    response = ctx.call(DeleteGroupsRequest(groups=("s", "g", "s")))
    assert [r.error for r in response.results] == [Errors.NONE, Errors.NON_EMPTY_GROUP, Errors.GROUP_ID_NOT_FOUND]
    assert ctx.call(OffsetFetchRequest(group_id="s")).topics == ()
    assert [g for g, _, _, _ in ctx.coordinator.hard_state().offsets] == []
    ctx.leave("g", MemberIdentity(a))
    assert ctx.call(DeleteGroupsRequest(groups=("g",))).results[0].error == Errors.NONE
    assert ctx.coordinator.hard_state().groups == ()


def test_heartbeat_codes_in_each_state(ctx: CoordinatorTestContext) -> None:
    """NONE when Stable and CompletingRebalance, REBALANCE_IN_PROGRESS when preparing, ILLEGAL_GENERATION for a
    stale generation, UNKNOWN_MEMBER_ID for an unknown member."""
    (a, b), generation = ctx.stable_group("g", 2)
    assert ctx.heartbeat("g", generation, b).error == Errors.NONE
    ctx.join("g", a)
    assert ctx.heartbeat("g", generation, b).error == Errors.REBALANCE_IN_PROGRESS
    ctx.join("g", b)
    assert ctx.heartbeat("g", generation + 1, b).error == Errors.NONE  # CompletingRebalance
    assert ctx.heartbeat("g", generation, b).error == Errors.ILLEGAL_GENERATION
    assert ctx.heartbeat("g", generation + 1, "x").error == Errors.UNKNOWN_MEMBER_ID


def test_batch_leave_reports_each_member(ctx: CoordinatorTestContext) -> None:
    """One LeaveGroup removes several members, with a per-member error for the unknown one."""
    (a, b, c), _ = ctx.stable_group("g", 3)
    response = ctx.leave("g", MemberIdentity(a), MemberIdentity("x"), MemberIdentity(c))
    assert [m.error for m in response.members] == [Errors.NONE, Errors.UNKNOWN_MEMBER_ID, Errors.NONE]
    assert list(ctx.group("g").members) == [b]
