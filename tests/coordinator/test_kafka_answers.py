"""Answers the parity suite (tests/parity) found different from Kafka 4.4.0's coordinator, now Kafka's, on the
manual clock: old JoinGroup versions, a restarted static leader before JoinGroup v9, DescribeGroups during a
rebalance, edge values of OffsetCommit and OffsetFetch, and a group emptied by OffsetDelete."""

from __future__ import annotations

from groupcoord.group import GroupState
from groupcoord.protocol import (
    DescribeGroupsRequest,
    Errors,
    JoinGroupRequest,
    ListGroupsRequest,
    MemberIdentity,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    OffsetFetchTopic,
)
from groupcoord.protocol.responses import JoinGroupResponse

from .context import INITIAL_DELAY_MS, SESSION_MS, CoordinatorTestContext, protocols
from .test_offsets import _retention_ctx
from .test_static_membership import LONG_SESSION_MS, _static_group


def _old_join(ctx: CoordinatorTestContext, group_id: str, member_id: str = "") -> int:
    """A JoinGroup as v0-v3 send it: no KIP-394 round trip, no instance id."""
    return ctx.send(JoinGroupRequest(group_id=group_id, session_timeout_ms=SESSION_MS, member_id=member_id,
                                     protocol_type="consumer", protocols=protocols("range"), client_id="old",
                                     require_known_member_id=False))


def test_a_join_below_v4_enters_the_group_at_once(ctx: CoordinatorTestContext) -> None:
    """No MEMBER_ID_REQUIRED: the first JoinGroup is parked and answered with a member id and generation 1."""
    token = _old_join(ctx, "g")
    assert ctx.response(token) is None
    ctx.sleep(INITIAL_DELAY_MS)
    response = ctx.response(token)
    assert isinstance(response, JoinGroupResponse) and response.error == Errors.NONE
    assert response.generation_id == 1 and response.leader == response.member_id
    assert response.member_id.startswith("old-")
    assert not ctx.group("g").pending_members and response.member_id in ctx.group("g").members


def _restart_static_leader(ctx: CoordinatorTestContext, *, skip: bool) -> tuple[str, JoinGroupResponse]:
    leader, _, generation = _static_group(ctx)
    response = ctx.response(ctx.send(JoinGroupRequest(
        group_id="g", session_timeout_ms=LONG_SESSION_MS, rebalance_timeout_ms=30_000, group_instance_id="i-1",
        protocol_type="consumer", protocols=protocols("range"), supports_skip_assignment=skip)))
    assert isinstance(response, JoinGroupResponse) and response.error == Errors.NONE
    assert response.generation_id == generation and ctx.group("g").state == GroupState.STABLE
    return leader, response


def test_a_static_leader_restarting_below_v9_is_answered_as_a_follower(ctx: CoordinatorTestContext) -> None:
    """Kafka names the old leader id and sends no members: the member cannot skip the assignment, so it must not
    believe it leads; it syncs as a follower and keeps its assignment."""
    old_leader, response = _restart_static_leader(ctx, skip=False)
    assert response.leader == old_leader != response.member_id
    assert response.members == () and not response.skip_assignment
    assert ctx.group("g").leader_id == response.member_id  # the group itself knows its new leader id


def test_a_static_leader_restarting_at_v9_leads_and_skips_the_assignment(ctx: CoordinatorTestContext) -> None:
    """KIP-814: the new member id leads, gets the members, and is told to skip the assignment."""
    _, response = _restart_static_leader(ctx, skip=True)
    assert response.leader == response.member_id and response.skip_assignment and len(response.members) == 2


def test_describe_while_preparing_a_rebalance_shows_the_last_assignments(ctx: CoordinatorTestContext) -> None:
    """Metadata and the protocol only while Stable; each member's last assignment in every state."""
    leader, follower, _ = _static_group(ctx)
    ctx.join_new("g")  # a new member: PreparingRebalance
    [described] = ctx.call(DescribeGroupsRequest(groups=("g",))).groups
    assert described.state == GroupState.PREPARING_REBALANCE.value and described.protocol == ""
    by_id = {m.member_id: m for m in described.members}
    assert by_id[leader].assignment == b"a1" and by_id[follower].assignment == b"a2"
    assert all(m.metadata == b"" for m in described.members)


def test_negative_offsets_are_stored_and_returned(ctx: CoordinatorTestContext) -> None:
    """Kafka accepts any committed offset: -1 and -2 are stored and fetched back, and survive a reload."""
    response = ctx.commit("s", {("t", 0): -1, ("t", 1): -2})
    assert [p.error for p in response.topics[0].partitions] == [Errors.NONE, Errors.NONE]
    for context in (ctx, ctx.reloaded()):
        fetched = context.call(OffsetFetchRequest(group_id="s", topics=(OffsetFetchTopic("t", (0, 1)),)))
        assert [(p.offset, p.error) for p in fetched.topics[0].partitions] == [(-1, Errors.NONE), (-2, Errors.NONE)]


def test_metadata_is_measured_in_utf16_units_as_java_does(ctx: CoordinatorTestContext) -> None:
    """2049 two-byte characters (4098 UTF-8 bytes) are 2049 units: within 4096. 2049 characters outside the Basic
    Multilingual Plane are 4098 units (surrogate pairs): too large."""
    assert ctx.commit("s", {("t", 0): 1}, metadata="\u00e9" * 2049).topics[0].partitions[0].error == Errors.NONE
    assert ctx.commit("s", {("t", 0): 1}, metadata="\U0001d11e" * 2049).topics[0].partitions[0].error == \
        Errors.OFFSET_METADATA_TOO_LARGE


def test_fetch_of_a_negative_partition_answers_no_offset(ctx: CoordinatorTestContext) -> None:
    """OffsetFetch does not check partitions: -1 is simply a partition with nothing committed."""
    fetched = ctx.call(OffsetFetchRequest(group_id="s", topics=(OffsetFetchTopic("t", (-1,)),)))
    assert fetched.error == Errors.NONE
    assert [(p.partition, p.offset, p.error) for p in fetched.topics[0].partitions] == [(-1, -1, Errors.NONE)]


def test_a_group_emptied_by_offset_delete_stays_until_the_expiry_cycle() -> None:
    """The group keeps existing (Empty, listed, deletable, the member that left is unknown) after its last offset
    is deleted; the periodic expiry then removes it, as Kafka's cleanup cycle does."""
    ctx = _retention_ctx()
    (a,), generation = ctx.stable_group("g", 1)
    ctx.commit("g", {("t", 0): 5}, generation=generation, member_id=a)
    ctx.leave("g", MemberIdentity(a))
    deleted = ctx.call(OffsetDeleteRequest(group_id="g", topics=(OffsetFetchTopic("t", (0,)),)))
    assert deleted.error == Errors.NONE and deleted.topics[0].partitions[0].error == Errors.NONE
    [described] = ctx.call(DescribeGroupsRequest(groups=("g",))).groups
    assert (described.error, described.state, described.protocol_type) == (Errors.NONE, "Empty", "consumer")
    assert [g.group_id for g in ctx.call(ListGroupsRequest()).groups] == ["g"]
    again = ctx.commit("g", {("t", 0): 6}, generation=generation, member_id=a)
    assert again.topics[0].partitions[0].error == Errors.UNKNOWN_MEMBER_ID
    ctx.sleep(120_000)  # the expiry check runs every minute
    assert ctx.coordinator.group("g") is None and ctx.coordinator.hard_state().groups == ()
