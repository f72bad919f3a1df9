"""When a change of partition counts rebalances a Stable group: only when its assignment no longer matches them."""

from __future__ import annotations

from groupcoord.group import GroupState

from .context import CoordinatorTestContext


def _state(ctx: CoordinatorTestContext) -> GroupState:
    group = ctx.coordinator.group("g")
    assert group is not None
    return group.state


def test_a_topic_the_assignment_already_covers_whole_starts_no_rebalance(ctx: CoordinatorTestContext) -> None:
    """The race a Structured Streaming query on Kafka met under load: the query copies the topic into the catalog,
    joins, and the group is assigned all 6 partitions before the coordinator's snapshot of the catalog shows the topic
    at all. The snapshot's change (no topic -> 6 partitions) is one the assignment already reflects: the group stays
    Stable (it used to rebalance, and idle members had to poll within the rebalance timeout to keep their share)."""
    ctx.metadata_change({})
    ctx.stable_group("g", 2, partitions={"t": 6})
    ctx.metadata_change({"t": 6})
    assert _state(ctx) is GroupState.STABLE


def test_a_topic_that_grows_past_the_assignment_rebalances(ctx: CoordinatorTestContext) -> None:
    ctx.metadata_change({})
    ctx.stable_group("g", 2, partitions={"t": 6})
    ctx.metadata_change({"t": 7})
    assert _state(ctx) is GroupState.PREPARING_REBALANCE


def test_a_subscribed_topic_created_after_the_assignment_rebalances(ctx: CoordinatorTestContext) -> None:
    """The members subscribe to ``t`` (see the context's protocols); an assignment made while ``t`` had no
    partitions gives none out, so ``t``'s creation rebalances the group."""
    ctx.metadata_change({})
    ctx.stable_group("g", 2, partitions={"u": 2})
    ctx.metadata_change({"t": 3, "u": 2})
    assert _state(ctx) is GroupState.PREPARING_REBALANCE


def test_a_deleted_topic_that_the_assignment_gives_out_rebalances(ctx: CoordinatorTestContext) -> None:
    ctx.metadata_change({"t": 6})
    ctx.stable_group("g", 2, partitions={"t": 6})
    ctx.metadata_change({})
    assert _state(ctx) is GroupState.PREPARING_REBALANCE
