"""JoinGroup: KIP-394 member ids, Kafka's order of checks, initial delay, protocol selection, rebalance timeout."""

from __future__ import annotations

from groupcoord.coordinator import CoordinatorConfig
from groupcoord.group import GroupState
from groupcoord.log.memory import InMemoryRecordLog
from groupcoord.protocol import Errors, JoinGroupProtocol

from .context import INITIAL_DELAY_MS, SESSION_MS, TEST_CONFIG, CoordinatorTestContext, protocols


def test_new_member_gets_member_id_required_and_pending_id_expires(ctx: CoordinatorTestContext) -> None:
    """KIP-394: the first JoinGroup only hands out an id; unused, it expires after the session timeout."""
    first = ctx.response(ctx.join("g"))
    assert first.error == Errors.MEMBER_ID_REQUIRED and first.member_id == "client-1"
    group = ctx.coordinator.group("g")
    assert group is not None and group.is_pending_member("client-1") and group.state == GroupState.EMPTY
    ctx.sleep(SESSION_MS)
    assert not group.is_pending_member("client-1")
    assert ctx.response(ctx.join("g", "client-1")).error == Errors.UNKNOWN_MEMBER_ID


def test_join_checks_run_in_kafkas_order() -> None:
    """Session bounds before group size before protocol support before MEMBER_ID_REQUIRED."""
    ctx = CoordinatorTestContext(InMemoryRecordLog(), CoordinatorConfig(
        initial_rebalance_delay_ms=0, min_session_timeout_ms=1000, max_session_timeout_ms=60_000, group_max_size=1))
    ctx.stable_group("g", 1)
    bad_everything = ctx.join("g", session_ms=10, protos=(JoinGroupProtocol("other", b""),))
    assert ctx.response(bad_everything).error == Errors.INVALID_SESSION_TIMEOUT
    full_and_wrong = ctx.join("g", protos=(JoinGroupProtocol("other", b""),))
    assert ctx.response(full_and_wrong).error == Errors.GROUP_MAX_SIZE_REACHED
    ctx2 = CoordinatorTestContext(InMemoryRecordLog())
    ctx2.stable_group("g", 1)
    assert ctx2.response(ctx2.join("g", protos=(JoinGroupProtocol("other", b""),))).error == \
        Errors.INCONSISTENT_GROUP_PROTOCOL
    assert ctx2.response(ctx2.join("g")).error == Errors.MEMBER_ID_REQUIRED


def test_initial_delay_extends_while_members_arrive_capped_by_rebalance_timeout(
        ctx: CoordinatorTestContext) -> None:
    """Leaving Empty waits the initial delay, extended by each delay in which a new member arrived, but never
    beyond the rebalance timeout."""
    tokens = [ctx.join_new("g", rebalance_ms=7000)[1]]
    for _ in range(5):  # a new member every 2 s keeps extending the delay...
        ctx.sleep(2000)
        if all(ctx.response(t) is None for t in tokens):
            tokens.append(ctx.join_new("g", rebalance_ms=7000)[1])
    responses = ctx.assert_all_joined(tokens)
    group = ctx.coordinator.group("g")
    assert group is not None
    # ... but the join completed at the 7 s rebalance timeout: 3 s delay, then 3 s, then the last 1 s.
    assert group.state_timestamp_ms == 7000 == INITIAL_DELAY_MS * 2 + 1000
    assert len(responses) == 4


def test_protocol_selection_votes_among_common_protocols(ctx: CoordinatorTestContext) -> None:
    """Seed 004 rolling upgrade: the old strategy stays until every member supports the new one."""
    t1 = ctx.join_new("g", protos=protocols("range", "roundrobin"))[1]
    t2 = ctx.join_new("g", protos=protocols("roundrobin", "range"))[1]
    t3 = ctx.join_new("g", protos=protocols("range"))[1]
    ctx.sleep_until_answered([t1, t2, t3])
    assert {r.protocol_name for r in ctx.assert_all_joined([t1, t2, t3])} == {"range"}


def test_group_rebalance_timeout_is_the_largest_member_timeout(ctx: CoordinatorTestContext) -> None:
    """The join phase waits for the slowest member's rebalance timeout."""
    (a, b), _ = ctx.stable_group("g", 2, rebalance_ms=5000, session_ms=60_000)
    ctx.join("g", a, rebalance_ms=20_000, session_ms=60_000)
    group = ctx.coordinator.group("g")
    assert group is not None and group.rebalance_timeout_ms == 20_000
    assert ctx.coordinator.timer_keys().count("join-g") == 1
    ctx.sleep(19_999)
    assert ctx.group("g").state == GroupState.PREPARING_REBALANCE
    ctx.sleep(1)
    assert ctx.group("g").state == GroupState.COMPLETING_REBALANCE and list(group.members) == [a]
    assert b not in group.members


def test_follower_rejoining_stable_group_unchanged_gets_current_generation(ctx: CoordinatorTestContext) -> None:
    """A follower with unchanged metadata gets the current generation at once; no rebalance."""
    (_, b), generation = ctx.stable_group("g", 2)
    response = ctx.response(ctx.join("g", b))
    assert response.error == Errors.NONE and response.generation_id == generation and response.members == ()
    assert ctx.group("g").state == GroupState.STABLE


def test_default_test_config_is_sane() -> None:
    """The context's configuration keeps sessions within bounds."""
    assert TEST_CONFIG.min_session_timeout_ms <= SESSION_MS <= TEST_CONFIG.max_session_timeout_ms
