"""OffsetCommit, OffsetFetch, OffsetDelete and retention (KIP-211)."""

from __future__ import annotations

from groupcoord.coordinator import CoordinatorConfig
from groupcoord.log.memory import InMemoryRecordLog
from groupcoord.protocol import Errors, MemberIdentity, OffsetDeleteRequest, OffsetFetchRequest, OffsetFetchTopic

from .context import INITIAL_DELAY_MS, CoordinatorTestContext

RETENTION_MS = 60 * 60 * 1000


def _retention_ctx() -> CoordinatorTestContext:
    return CoordinatorTestContext(InMemoryRecordLog(), CoordinatorConfig(
        initial_rebalance_delay_ms=INITIAL_DELAY_MS, min_session_timeout_ms=1000, max_session_timeout_ms=60_000,
        offsets_retention_ms=RETENTION_MS, offsets_retention_check_interval_ms=60_000))


def _fetch(ctx: CoordinatorTestContext, group: str, topics: tuple[OffsetFetchTopic, ...] | None = None
           ) -> dict[tuple[str, int], int]:
    response = ctx.call(OffsetFetchRequest(group_id=group, topics=topics))
    assert response.error == Errors.NONE
    return {(t.name, p.partition): p.offset for t in response.topics for p in t.partitions}


def test_simple_commit_on_unknown_group_creates_it_and_fetch_returns_offsets(ctx: CoordinatorTestContext) -> None:
    """Generation -1 without a member id is a simple commit; fetch gives -1 where nothing is committed."""
    assert ctx.commit("s", {("t", 0): 10, ("t", 1): 11}).topics[0].partitions[1].error == Errors.NONE
    assert _fetch(ctx, "s") == {("t", 0): 10, ("t", 1): 11}
    assert _fetch(ctx, "s", (OffsetFetchTopic("t", (1, 2)),)) == {("t", 1): 11, ("t", 2): -1}
    assert _fetch(ctx, "nobody", (OffsetFetchTopic("t", (0,)),)) == {("t", 0): -1}


def test_member_commit_counts_as_heartbeat(ctx: CoordinatorTestContext) -> None:
    """An accepted commit restarts the committing member's session: A, which only commits, outlives B."""
    (a, b), generation = ctx.stable_group("g", 2)
    ctx.sleep(8000)
    assert ctx.commit("g", {("t", 0): 1}, generation=generation, member_id=a).topics[0].partitions[0].error == \
        Errors.NONE
    ctx.sleep(4000)
    group = ctx.coordinator.group("g")
    assert group is not None and a in group.members and b not in group.members


def test_commit_in_preparing_rebalance_is_accepted_for_current_generation(ctx: CoordinatorTestContext) -> None:
    """While preparing, the old generation is still current, so its commits count."""
    (a, b), generation = ctx.stable_group("g", 2)
    ctx.join("g", a)  # the leader rejoins: PreparingRebalance
    response = ctx.commit("g", {("t", 0): 7}, generation=generation, member_id=b)
    assert response.topics[0].partitions[0].error == Errors.NONE
    ctx.sleep(9000)
    assert b in ctx.group("g").members


def test_offsets_of_an_empty_group_expire_after_retention_and_the_group_dies() -> None:
    """KIP-211: the clock starts when the group becomes Empty; with no offsets left it is Dead and tombstoned."""
    ctx = _retention_ctx()
    (a,), generation = ctx.stable_group("g", 1)
    ctx.commit("g", {("t", 0): 5}, generation=generation, member_id=a)
    ctx.leave("g", MemberIdentity(a))
    ctx.sleep(RETENTION_MS - 60_000)
    assert _fetch(ctx, "g") == {("t", 0): 5}
    ctx.sleep(120_000)
    assert _fetch(ctx, "g") == {}
    assert ctx.coordinator.group("g") is None and ctx.coordinator.hard_state().groups == ()


def test_offsets_of_unsubscribed_topics_expire_in_a_stable_group() -> None:
    """A Stable consumer group keeps offsets of topics it consumes; others age from their last commit."""
    ctx = _retention_ctx()
    (a,), generation = ctx.stable_group("g", 1)
    ctx.commit("g", {("t", 0): 1, ("old", 0): 2}, generation=generation, member_id=a)
    for _ in range(RETENTION_MS // 5000 + 20):
        ctx.sleep(5000)
        ctx.heartbeat("g", generation, a)
    assert _fetch(ctx, "g") == {("t", 0): 1}


def test_explicit_retention_time_expires_at_its_own_time() -> None:
    """A simple commit with retention_time_ms expires then, not after the broker retention."""
    ctx = _retention_ctx()
    ctx.commit("s", {("t", 0): 1}, retention_ms=120_000)
    ctx.sleep(180_000)
    assert _fetch(ctx, "s") == {}


def test_offset_delete_refuses_subscribed_topics_and_deletes_others(ctx: CoordinatorTestContext) -> None:
    """GROUP_SUBSCRIBED_TO_TOPIC for consumed topics; other offsets are deleted."""
    (a,), generation = ctx.stable_group("g", 1)
    ctx.commit("g", {("t", 0): 1, ("old", 0): 2}, generation=generation, member_id=a)
    response = ctx.call(OffsetDeleteRequest(group_id="g", topics=(OffsetFetchTopic("t", (0,)),
                                                                  OffsetFetchTopic("old", (0,)))))
    assert [t.partitions[0].error for t in response.topics] == [Errors.GROUP_SUBSCRIBED_TO_TOPIC, Errors.NONE]
    assert _fetch(ctx, "g") == {("t", 0): 1}


def test_metadata_over_the_limit_is_rejected_per_partition(ctx: CoordinatorTestContext) -> None:
    """Only the partition with oversized metadata fails."""
    response = ctx.commit("s", {("t", 0): 1}, metadata="m" * 4096)
    assert response.topics[0].partitions[0].error == Errors.NONE
    response = ctx.commit("s", {("t", 1): 1}, metadata="m" * 4097)
    assert response.topics[0].partitions[0].error == Errors.OFFSET_METADATA_TOO_LARGE
    assert _fetch(ctx, "s") == {("t", 0): 1}
