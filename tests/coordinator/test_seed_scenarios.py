"""The failure scenarios of seeds 000, 002 and 004 as deterministic tests on a manual clock.

docs/seed-scenarios.md maps each scenario to its test. Where a seed and Kafka's classic coordinator differ, the
test follows Kafka and its docstring names the seed's variant.
"""

from __future__ import annotations

from groupcoord.coordinator import CompleteAssignment
from groupcoord.group import GroupState
from groupcoord.protocol import Errors, JoinGroupResponse, MemberIdentity

from .context import REBALANCE_MS, SESSION_MS, CoordinatorTestContext, protocols, round_robin


def _rejoin_all(ctx: CoordinatorTestContext, group: str, members: list[str]) -> dict[str, int]:
    return {m: ctx.join(group, m) for m in members}


def test_consumer_paused_before_join_is_marked_dead_and_others_get_new_generation(
        ctx: CoordinatorTestContext) -> None:
    """Seed 000, "Heartbeats during rebalance": C pauses before sending JoinGroup. Its session expires, it is
    removed, and A and B complete the rebalance with a new generation. (The seed answered the others with a
    RebalanceFailed error; Kafka's classic coordinator gives them the new generation instead.)"""
    (a, b, c), generation = ctx.stable_group("g", 3)
    ctx.sleep(2000)
    tokens = _rejoin_all(ctx, "g", [a, b])  # A rejoining as leader starts the rebalance; C is paused
    assert ctx.response(tokens[a]) is None
    ctx.sleep(SESSION_MS - 2000)  # C's last sign of life was its SyncGroup at t=6000 on the manual clock
    ctx.sleep(2000)
    joined = ctx.assert_all_joined(tokens.values())
    assert {r.generation_id for r in joined} == {generation + 1}
    group = ctx.coordinator.group("g")
    assert group is not None and list(group.members) == [a, b]
    assert ctx.heartbeat("g", generation, c).error == Errors.UNKNOWN_MEMBER_ID


def test_consumer_paused_after_join_gets_response_and_is_marked_dead_after_another_session_timeout(
        ctx: CoordinatorTestContext) -> None:
    """Seed 000, "Heartbeats during rebalance": B sends JoinGroup, then pauses. Failure detection pauses while its
    JoinGroup is parked, so B still gets the JoinGroup response although A rejoins only after more than a session
    timeout. B's session restarts with that response, and B is marked dead one session timeout later."""
    (a, b), generation = ctx.stable_group("g", 2)
    ctx.metadata_change({"t": 6})
    ctx.metadata_change({"t": 7})  # a subscribed topic grew: the group rebalances
    t_b = ctx.join("g", b)  # ... and B pauses right after this
    for _ in range(5):  # A keeps heartbeating for 1.5 session timeouts before rejoining
        ctx.sleep(SESSION_MS * 3 // 10)
        assert ctx.heartbeat("g", generation, a).error == Errors.REBALANCE_IN_PROGRESS
    t_a = ctx.join("g", a)
    joined = ctx.assert_all_joined([t_a, t_b])
    new_generation = joined[0].generation_id
    assert _join_response(ctx, t_b).member_id == b and new_generation == generation + 1
    ctx.sync("g", new_generation, a, round_robin([a, b], {"t": 7}))
    ctx.sleep(SESSION_MS - 1)
    assert ctx.heartbeat("g", new_generation, a).error == Errors.NONE
    ctx.sleep(1)
    group = ctx.coordinator.group("g")
    assert group is not None and list(group.members) == [a]
    assert ctx.heartbeat("g", new_generation, a).error == Errors.REBALANCE_IN_PROGRESS


def test_commits_with_older_or_newer_generation_are_rejected(ctx: CoordinatorTestContext) -> None:
    """Seed 000, "Offset commits during rebalance": both an older and a newer generation are ILLEGAL_GENERATION,
    and nothing is committed."""
    (a, _), generation = ctx.stable_group("g", 2)
    before = ctx.coordinator.hard_state()
    for wrong in (generation - 1, generation + 1):
        response = ctx.commit("g", {("t", 0): 5}, generation=wrong, member_id=a)
        assert response.topics[0].partitions[0].error == Errors.ILLEGAL_GENERATION
    assert ctx.coordinator.hard_state() == before
    ok = ctx.commit("g", {("t", 0): 5}, generation=generation, member_id=a)
    assert ok.topics[0].partitions[0].error == Errors.NONE


def test_commit_during_completing_rebalance_is_rebalance_in_progress(ctx: CoordinatorTestContext) -> None:
    """Seed 000: between the new generation and its assignment, a commit gets REBALANCE_IN_PROGRESS."""
    (a, b), generation = ctx.stable_group("g", 2)
    tokens = _rejoin_all(ctx, "g", [a, b])
    new_generation = ctx.assert_all_joined(tokens.values())[0].generation_id
    assert new_generation == generation + 1
    response = ctx.commit("g", {("t", 0): 1}, generation=new_generation, member_id=a)
    assert response.topics[0].partitions[0].error == Errors.REBALANCE_IN_PROGRESS


def test_subscription_change_forces_a_rejoin(ctx: CoordinatorTestContext) -> None:
    """Seed 004, "Subscription Change": a member rejoining with new metadata starts a rebalance; the others
    learn it from REBALANCE_IN_PROGRESS on their heartbeat, rejoin, and everyone gets the next generation."""
    (a, b), generation = ctx.stable_group("g", 2)
    t_b = ctx.join("g", b, protos=protocols("range", topics=("t", "u")))
    assert ctx.response(t_b) is None
    assert ctx.heartbeat("g", generation, a).error == Errors.REBALANCE_IN_PROGRESS
    t_a = ctx.join("g", a)
    joined = ctx.assert_all_joined([t_a, t_b])
    assert {r.generation_id for r in joined} == {generation + 1}
    group = ctx.coordinator.group("g")
    assert group is not None and group.subscribed_topics == frozenset({"t", "u"})


def test_topic_partition_change_rebalances_subscribed_groups_only(ctx: CoordinatorTestContext) -> None:
    """Seed 000, "Partition changes for subscribed topics" (and seed 002 §6): a partition-count change of a
    subscribed topic rebalances the group; the members see REBALANCE_IN_PROGRESS and rejoin. A group subscribed
    to other topics stays Stable."""
    (a, b), generation = ctx.stable_group("g", 2)
    (x,), other_generation = ctx.stable_group("other", 1, protos=protocols("range", topics=("u",)))
    ctx.metadata_change({"t": 6, "u": 2})
    ctx.metadata_change({"t": 8, "u": 2})
    assert ctx.heartbeat("g", generation, a).error == Errors.REBALANCE_IN_PROGRESS
    assert ctx.heartbeat("other", other_generation, x).error == Errors.NONE
    joined = ctx.assert_all_joined(_rejoin_all(ctx, "g", [a, b]).values())
    assert joined[0].generation_id == generation + 1


def test_leader_failure_gives_a_new_leader(ctx: CoordinatorTestContext) -> None:
    """Seed 004, "Leader Failures": the leader's session expires; the others rejoin and one becomes leader."""
    (leader, b, c), generation = ctx.stable_group("g", 3)
    assert ctx.group("g").leader_id == leader
    for _ in range(4):
        ctx.sleep(3000)
        ctx.heartbeat("g", generation, b)
        ctx.heartbeat("g", generation, c)
    tokens = _rejoin_all(ctx, "g", [b, c])
    joined = ctx.assert_all_joined(tokens.values())
    assert {r.leader for r in joined} == {b}
    assert [r.members != () for r in joined] == [True, False]


def test_assignment_error_reaches_every_member(ctx: CoordinatorTestContext) -> None:
    """Seed 004, "Assignment Failure": the leader reports an assignment error; every waiting member gets it
    and the group rebalances."""
    (a, b, c), generation = ctx.stable_group("g", 3)
    tokens = _rejoin_all(ctx, "g", [a, b, c])
    new_generation = ctx.assert_all_joined(tokens.values())[0].generation_id
    assert new_generation == generation + 1
    waiting = [ctx.sync("g", new_generation, m) for m in (b, c)]
    leader_sync = ctx.sync("g", new_generation, a, assignment_error=Errors.INCONSISTENT_GROUP_PROTOCOL)
    for token in [*waiting, leader_sync]:
        assert ctx.sync_response(token).error == Errors.INCONSISTENT_GROUP_PROTOCOL
    assert ctx.group("g").state == GroupState.PREPARING_REBALANCE


def test_server_assignment_error_reaches_every_member(ctx: CoordinatorTestContext) -> None:
    """Seed 002 (coordinator-side assignment) with seed 004's failure handling: the server assignor fails and
    every waiting member gets the error."""
    server = protocols("server-range")
    tokens = [ctx.join_new("s", protos=server)[1] for _ in range(2)]
    ctx.sleep_until_answered(tokens)
    joined = ctx.assert_all_joined(tokens)
    generation = joined[0].generation_id
    waiting = [ctx.sync("s", generation, r.member_id) for r in joined]
    ctx.complete_assignment(CompleteAssignment(group_id="s", generation_id=generation,
                                               error=Errors.UNKNOWN_SERVER_ERROR))
    assert {ctx.sync_response(t).error for t in waiting} == {Errors.UNKNOWN_SERVER_ERROR}


def test_coordinator_failover_after_sync_keeps_members_without_rejoin(ctx: CoordinatorTestContext) -> None:
    """Seed 004, "Handling Coordinator Failures" (sync metadata persisted): the new coordinator loads the group
    Stable with its generation and assignment; members heartbeat and re-sync without rejoining."""
    (a, b), generation = ctx.stable_group("g", 2)
    before = ctx.coordinator.group("g")
    assert before is not None
    assignment_b = before.get(b).assignment
    failover = ctx.reloaded()
    group = failover.coordinator.group("g")
    assert group is not None and group.state == GroupState.STABLE and group.generation_id == generation
    assert failover.heartbeat("g", generation, a).error == Errors.NONE
    assert failover.sync_response(failover.sync("g", generation, b)).assignment == assignment_b


def test_coordinator_failover_mid_rebalance_makes_members_rejoin(ctx: CoordinatorTestContext) -> None:
    """Seed 004, "Handling Coordinator Failures" (before sync is persisted): the new coordinator comes back at the
    last completed generation; members that already saw the next generation get ILLEGAL_GENERATION and rejoin.
    Kafka's classic coordinator persists a generation with its assignment, so the seed's "generation metadata
    persisted, sync not" case also falls back to the last completed generation."""
    (a, b), generation = ctx.stable_group("g", 2)
    tokens = _rejoin_all(ctx, "g", [a, b])
    new_generation = ctx.assert_all_joined(tokens.values())[0].generation_id
    failover = ctx.reloaded()
    assert failover.group("g").generation_id == generation
    assert failover.heartbeat("g", new_generation, a).error == Errors.ILLEGAL_GENERATION
    assert failover.sync_response(failover.sync("g", new_generation, b)).error == Errors.ILLEGAL_GENERATION
    rejoined = failover.assert_all_joined(_rejoin_all(failover, "g", [a, b]).values())
    assert rejoined[0].generation_id == generation + 1


def test_member_that_never_syncs_is_removed_after_rebalance_timeout(ctx: CoordinatorTestContext) -> None:
    """Seed 002 StopFetcher/StartFetcher map to the revoke/assign callbacks around JoinGroup/SyncGroup; a member
    that does not finish (no SyncGroup within the rebalance timeout) is removed and the group rebalances."""
    (a, b), generation = ctx.stable_group("g", 2, session_ms=60_000, rebalance_ms=REBALANCE_MS)
    tokens = {m: ctx.join("g", m, session_ms=60_000) for m in (a, b)}
    new_generation = ctx.assert_all_joined(tokens.values())[0].generation_id
    assert new_generation == generation + 1
    ctx.sync("g", new_generation, a, round_robin([a, b], {"t": 2}))
    ctx.sleep(REBALANCE_MS)
    group = ctx.coordinator.group("g")
    assert group is not None and list(group.members) == [a]
    assert group.state == GroupState.PREPARING_REBALANCE


def test_missed_pings_map_to_session_timeout(ctx: CoordinatorTestContext) -> None:
    """Seed 002 §8, "On Consumer Failure Detection": ping retries become the session timeout. A member that stops
    heartbeating is removed exactly when its session runs out, not before."""
    (a, b), generation = ctx.stable_group("g", 2)
    ctx.sleep(SESSION_MS - 1)
    assert ctx.heartbeat("g", generation, b).error == Errors.NONE
    ctx.sleep(1)
    assert ctx.heartbeat("g", generation, b).error == Errors.REBALANCE_IN_PROGRESS
    assert ctx.heartbeat("g", generation, a).error == Errors.UNKNOWN_MEMBER_ID


def test_leave_of_last_member_empties_the_group_and_persists_it(ctx: CoordinatorTestContext) -> None:
    """Seed 002 §9 ("Deleting Group Registries"): when the last member leaves, the group is Empty and that
    generation is persisted, so offset retention can start (KIP-211)."""
    (a,), generation = ctx.stable_group("g", 1)
    response = ctx.leave("g", MemberIdentity(a))
    assert response.members[0].error == Errors.NONE
    group = ctx.coordinator.group("g")
    assert group is not None and group.state == GroupState.EMPTY and group.generation_id == generation + 1
    stored = dict(ctx.coordinator.hard_state().groups)["g"]
    assert stored.members == () and stored.generation_id == generation + 1


def _join_response(ctx: CoordinatorTestContext, token: int) -> JoinGroupResponse:
    response = ctx.response(token)
    assert isinstance(response, JoinGroupResponse)
    return response
