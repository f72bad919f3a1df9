"""Server-side assignment (``server-<assignor>``, seed 002): NeedsAssignment, CompleteAssignment, stale answers
dropped, assignment persisted before any SyncGroup answer, the leader's assignments ignored."""

from __future__ import annotations

from groupcoord.coordinator import CompleteAssignment, NeedsAssignment
from groupcoord.group import GroupState
from groupcoord.protocol import Errors, JoinGroupResponse
from groupcoord.protocol.consumer_protocol import decode_assignment

from .context import CoordinatorTestContext, protocols, round_robin


def _joined(ctx: CoordinatorTestContext, count: int) -> tuple[list[str], int]:
    tokens = [ctx.join_new("s", protos=protocols("server-range", topics=("t",)))[1] for _ in range(count)]
    ctx.sleep_until_answered(tokens)
    responses = ctx.assert_all_joined(tokens)
    return [r.member_id for r in responses], responses[0].generation_id


def test_join_completion_emits_needs_assignment_and_no_member_is_told_it_leads(ctx: CoordinatorTestContext) -> None:
    """The effect names the generation, the assignor and each member's subscription; every JoinGroup answer names
    no leader and lists no members, so no client runs an assignor or rejoins over its topic metadata (issue 16)."""
    members, generation = _joined(ctx, 2)
    (effect,) = ctx.effects
    assert isinstance(effect, NeedsAssignment)
    assert (effect.group_id, effect.generation_id, effect.assignor) == ("s", generation, "range")
    assert effect.subscriptions == {m: ("t",) for m in members}
    joins = [r for r in ctx.responses.values() if isinstance(r, JoinGroupResponse) and r.generation_id == generation]
    assert len(joins) == 2 and all(r.leader == "" and r.members == () for r in joins)


def test_assignment_is_persisted_before_syncs_are_answered_and_leader_assignment_ignored(
        ctx: CoordinatorTestContext) -> None:
    """SyncGroups wait (the leader's own assignments are ignored) until complete_assignment; its result carries
    the group record and the SyncGroup answers together, so they leave only once the record is durable."""
    members, generation = _joined(ctx, 2)
    tokens = [ctx.sync("s", generation, m, {m: b"leader-says" for m in members}) for m in members]
    assert all(ctx.response(t) is None for t in tokens)
    assert ctx.group("s").state == GroupState.COMPLETING_REBALANCE
    result = ctx.complete_assignment(CompleteAssignment(
        group_id="s", generation_id=generation, assignments=round_robin(members, {"t": 4})))
    assert len(result.records) == 1 and {t for t, _ in result.responses} == set(tokens)
    owned = [decode_assignment(ctx.sync_response(t).assignment).partitions[0].partitions for t in tokens]
    assert sorted(p for ps in owned for p in ps) == [0, 1, 2, 3]
    assert ctx.group("s").state == GroupState.STABLE


def test_stale_generation_assignment_is_dropped(ctx: CoordinatorTestContext) -> None:
    """An answer for an older generation changes nothing."""
    members, generation = _joined(ctx, 1)
    before = ctx.coordinator.hard_state()
    result = ctx.complete_assignment(CompleteAssignment(group_id="s", generation_id=generation - 1,
                                                        assignments={members[0]: b"x"}))
    assert result.records == () and result.responses == ()
    assert ctx.coordinator.hard_state() == before


def test_server_assignment_error_sends_members_back_to_rejoin(ctx: CoordinatorTestContext) -> None:
    """A failed server assignment answers waiting syncs with the error and starts a new rebalance."""
    members, generation = _joined(ctx, 1)
    token = ctx.sync("s", generation, members[0])
    ctx.complete_assignment(CompleteAssignment(group_id="s", generation_id=generation,
                                               error=Errors.UNKNOWN_SERVER_ERROR))
    assert ctx.sync_response(token).error == Errors.UNKNOWN_SERVER_ERROR
    assert ctx.group("s").state == GroupState.PREPARING_REBALANCE
