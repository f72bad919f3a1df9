"""Core bugs the simulator (groupcoord/sim) found, each as a named deterministic test on a manual clock."""

from __future__ import annotations

from groupcoord.coordinator import GroupCoordinator, NeedsTargetAssignment, decode_record
from groupcoord.group import GroupState
from groupcoord.log.memory import InMemoryRecordLog

from .consumer_context import CONFIG as CONSUMER_CONFIG
from .consumer_context import ConsumerGroupContext, T, U
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


def test_consumer_group_growth_lost_in_a_failover_still_gets_a_new_target() -> None:
    """Simulator seed 20117 (shrunk, tests/sim/test_found_schedules.py): u grows from 2 to 3 partitions and the
    coordinator bumps the consumer group's epoch for it, but dies before the records are durable. The new
    coordinator loads the group at epoch 1 with a target of u-0 and u-1; its first metadata snapshot has nothing to
    compare with, so it kept the group Stable and u-2 stayed unowned for good. Now a target that does not cover the
    subscribed topics' partitions gets a new group epoch on that first snapshot; a complete one changes nothing."""
    log = InMemoryRecordLog()
    ctx = ConsumerGroupContext(log)
    ctx.join("a", "u")
    for counts, epoch in (({"t": 4, "u": 2}, 1), ({"t": 4, "u": 3}, 2)):
        failover = GroupCoordinator(CONSUMER_CONFIG)
        for record in log.load().records:
            failover.replay(decode_record(record))
        failover.on_loaded(ctx.now)
        result = failover.on_metadata_change(counts, ctx.now, topic_ids={"t": T, "u": U})
        group = failover.consumer_group("g")
        assert group is not None and group.group_epoch == epoch
        asked = [e for e in result.effects if isinstance(e, NeedsTargetAssignment)]
        assert [(e.group_epoch, [(t.name, t.partitions) for t in e.topics]) for e in asked] == (
            [] if epoch == 1 else [(2, [("u", 3)])])
