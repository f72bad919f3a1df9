"""Core bugs the simulator (groupcoord/sim) found, each as a named deterministic test on a manual clock."""

from __future__ import annotations

from groupcoord.group import GroupState

from .context import CoordinatorTestContext


def test_partition_growth_lost_in_a_failover_still_rebalances_the_group(ctx: CoordinatorTestContext) -> None:
    """Simulator seed 968 (shrunk): t grows from 6 to 7 partitions and the coordinator starts a rebalance, but dies
    before anything is persisted. The new coordinator loads the group Stable with its 6-partition assignment; its
    first partition-count snapshot has nothing to compare with, so it used to keep the group Stable and partition 6
    stayed unowned (server-side groups have no leader that would notice). Now a Stable group whose assignment misses
    an existing partition of a subscribed topic rebalances on that first snapshot."""
    ctx.stable_group("g", 2, partitions={"t": 6})
    ctx.metadata_change({"t": 6})
    ctx.metadata_change({"t": 7})
    group = ctx.coordinator.group("g")
    assert group is not None and group.is_in(GroupState.PREPARING_REBALANCE)
    failover = ctx.reloaded()
    reloaded = failover.coordinator.group("g")
    assert reloaded is not None and reloaded.is_in(GroupState.STABLE)
    failover.metadata_change({"t": 7})
    assert reloaded.is_in(GroupState.PREPARING_REBALANCE)


def test_a_failover_with_a_complete_assignment_keeps_the_group_stable(ctx: CoordinatorTestContext) -> None:
    """The other side of the fix: when the loaded assignment covers every partition, the first snapshot changes
    nothing (a failover after sync still needs no rejoin)."""
    ctx.stable_group("g", 2, partitions={"t": 6})
    failover = ctx.reloaded()
    failover.metadata_change({"t": 6})
    group = failover.coordinator.group("g")
    assert group is not None and group.is_in(GroupState.STABLE)
