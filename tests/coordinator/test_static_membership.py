"""Static membership (KIP-345): a known instance with a new member id replaces the old one."""

from __future__ import annotations

from groupcoord.coordinator import CompleteAssignment
from groupcoord.group import GroupState
from groupcoord.protocol import Errors, JoinGroupProtocol, MemberIdentity
from groupcoord.protocol.consumer_protocol import Subscription, encode_subscription

from .context import REBALANCE_MS, CoordinatorTestContext, protocols, round_robin, subscription

LONG_SESSION_MS = 60_000


def _static_group(ctx: CoordinatorTestContext) -> tuple[str, str, int]:
    t1 = ctx.join("g", instance_id="i-1", session_ms=LONG_SESSION_MS)
    t2 = ctx.join("g", instance_id="i-2", session_ms=LONG_SESSION_MS)
    ctx.sleep_until_answered([t1, t2])
    r1, r2 = ctx.assert_all_joined([t1, t2])
    ctx.sync("g", r1.generation_id, r2.member_id)
    ctx.sync("g", r1.generation_id, r1.member_id, {r1.member_id: b"a1", r2.member_id: b"a2"})
    return r1.member_id, r2.member_id, r1.generation_id


def test_static_member_rejoining_with_same_protocols_replaces_old_id_without_rebalance(
        ctx: CoordinatorTestContext) -> None:
    """The instance keeps its assignment under the new id, the group stays Stable, the old id is fenced."""
    leader, follower, generation = _static_group(ctx)
    response = ctx.response(ctx.join("g", instance_id="i-2", session_ms=LONG_SESSION_MS))
    assert response.error == Errors.NONE and response.generation_id == generation
    new_id = response.member_id
    group = ctx.coordinator.group("g")
    assert group is not None and group.state == GroupState.STABLE and group.get(new_id).assignment == b"a2"
    assert dict(ctx.coordinator.hard_state().groups)["g"].members[1].member_id == new_id
    assert ctx.heartbeat("g", generation, follower, "i-2").error == Errors.FENCED_INSTANCE_ID
    assert ctx.heartbeat("g", generation, new_id, "i-2").error == Errors.NONE
    assert leader in group.members


def test_static_member_rejoining_with_other_metadata_for_the_same_topics_keeps_the_generation(
        ctx: CoordinatorTestContext) -> None:
    """As in Kafka, new metadata for the same selected protocol and the same topics (here: what a restarted Java
    consumer sends, no owned partitions and generation -1, in place of the partitions it reported) is stored without
    a rebalance: the group stays Stable at its generation and the member keeps its assignment."""
    _, _, generation = _static_group(ctx)
    restarted = (JoinGroupProtocol("range", encode_subscription(Subscription(topics=("t",), user_data=b"restarted"))),)
    response = ctx.response(ctx.join("g", instance_id="i-2", session_ms=LONG_SESSION_MS, protos=restarted))
    assert response.error == Errors.NONE and response.generation_id == generation
    group = ctx.group("g")
    assert group.state == GroupState.STABLE and group.get(response.member_id).assignment == b"a2"
    assert group.get(response.member_id).protocols == restarted


def test_static_member_back_with_more_topics_rebalances(ctx: CoordinatorTestContext) -> None:
    """A kept difference from Kafka (issue 26, docs/compatibility.md): a static member back with another set of
    topics (here t, then t and u) starts a rebalance. Kafka stores the new subscription and hands back the old
    assignment, which fits it, so u would stay unowned; groupcoord reassigns."""
    _, _, generation = _static_group(ctx)
    leader, _, generation = _static_group(ctx)
    token = ctx.join("g", instance_id="i-2", session_ms=LONG_SESSION_MS, protos=protocols("range", topics=("t", "u")))
    assert ctx.group("g").state == GroupState.PREPARING_REBALANCE and ctx.response(token) is None
    assert ctx.heartbeat("g", generation, leader, "i-1").error == Errors.REBALANCE_IN_PROGRESS
    leader_rejoin = ctx.join("g", leader, instance_id="i-1", session_ms=LONG_SESSION_MS)
    led, followed = ctx.assert_all_joined([leader_rejoin, token])
    assert led.generation_id == followed.generation_id == generation + 1
    assert {m.member_id: m.metadata for m in led.members}[followed.member_id] == subscription("t", "u")


def test_static_leader_back_with_fewer_topics_rebalances(ctx: CoordinatorTestContext) -> None:
    """The same for the leader and for a topic dropped: the rebalance starts at its JoinGroup (Kafka's consumer
    would refuse the old assignment and rejoin, one round trip later)."""
    _static_group(ctx)
    ctx.join("g", instance_id="i-1", session_ms=LONG_SESSION_MS, protos=protocols("range", topics=()))
    assert ctx.group("g").state == GroupState.PREPARING_REBALANCE


def test_static_member_rejoining_without_the_selected_protocol_triggers_rebalance(
        ctx: CoordinatorTestContext) -> None:
    """i-2 now prefers roundrobin, which i-1 lacks: range stays selected, no rebalance. Once i-1 offers and prefers
    roundrobin too, the selection changes: a rebalance."""
    _static_group(ctx)
    ctx.join("g", instance_id="i-2", session_ms=LONG_SESSION_MS, protos=protocols("roundrobin", "range"))
    assert ctx.group("g").state == GroupState.STABLE
    ctx.join("g", instance_id="i-1", session_ms=LONG_SESSION_MS, protos=protocols("roundrobin", "range"))
    assert ctx.group("g").state == GroupState.PREPARING_REBALANCE


def test_static_members_that_do_not_rejoin_are_kept(ctx: CoordinatorTestContext) -> None:
    """When the join phase times out, dynamic stragglers are dropped but static ones stay."""
    leader, follower, _ = _static_group(ctx)
    ctx.join("g", leader, instance_id="i-1", session_ms=LONG_SESSION_MS)
    ctx.sleep(REBALANCE_MS)
    group = ctx.coordinator.group("g")
    assert group is not None and set(group.members) == {leader, follower}


def test_admin_leave_by_instance_id_removes_the_static_member(ctx: CoordinatorTestContext) -> None:
    """LeaveGroup naming only the instance id removes whoever holds it."""
    _, follower, _ = _static_group(ctx)
    response = ctx.leave("g", MemberIdentity("", "i-2"))
    assert response.members[0].error == Errors.NONE
    assert follower not in ctx.group("g").members


def _server_side_static_group(ctx: CoordinatorTestContext) -> int:
    """i-1 on t and u, i-2 on t, assigned by the coordinator (``server-range``); returns the generation."""
    tokens = [ctx.join("s", instance_id="i-1", session_ms=LONG_SESSION_MS,
                       protos=protocols("server-range", topics=("t", "u"))),
              ctx.join("s", instance_id="i-2", session_ms=LONG_SESSION_MS,
                       protos=protocols("server-range", topics=("t",)))]
    ctx.sleep_until_answered(tokens)
    first, second = ctx.assert_all_joined(tokens)
    members = [first.member_id, second.member_id]
    syncs = [ctx.sync("s", first.generation_id, m) for m in members]
    ctx.complete_assignment(CompleteAssignment(group_id="s", generation_id=first.generation_id,
                                               assignments=round_robin(members, {"t": 2, "u": 2})))
    assert all(ctx.sync_response(t).error == Errors.NONE for t in syncs)
    return first.generation_id


def test_server_side_static_member_back_with_other_topics_rebalances(ctx: CoordinatorTestContext) -> None:
    """Issue 26: in a ``server-*`` group the coordinator assigns, so a static member back with different topics
    (i-1 drops u, which nobody else reads) gets a rebalance, not its old assignment back."""
    _server_side_static_group(ctx)
    ctx.join("s", instance_id="i-1", session_ms=LONG_SESSION_MS, protos=protocols("server-range", topics=("t",)))
    assert ctx.group("s").state == GroupState.PREPARING_REBALANCE


def test_server_side_static_member_rebalances_even_when_the_groups_topics_stay_the_same(
        ctx: CoordinatorTestContext) -> None:
    """i-2 adds u, which i-1 already reads: the group's topics are unchanged but i-2's are not, so the coordinator
    must reassign (else i-2 would be handed its t-only assignment back, or, dropping a topic, partitions it no
    longer reads: it would refuse them and, being a follower whose metadata is stored, rejoin without end)."""
    _server_side_static_group(ctx)
    ctx.join("s", instance_id="i-2", session_ms=LONG_SESSION_MS,
             protos=protocols("server-range", topics=("t", "u")))
    assert ctx.group("s").state == GroupState.PREPARING_REBALANCE


def test_server_side_static_member_back_with_the_same_topics_keeps_the_generation(
        ctx: CoordinatorTestContext) -> None:
    """The same topics (a plain restart): no rebalance, as for any static member."""
    generation = _server_side_static_group(ctx)
    response = ctx.response(ctx.join("s", instance_id="i-2", session_ms=LONG_SESSION_MS,
                                     protos=protocols("server-range", topics=("t",))))
    assert response.error == Errors.NONE and response.generation_id == generation
    assert ctx.group("s").state == GroupState.STABLE
