"""Rebalances and offset commits counted from the core's records, on a manual clock: a classic group's rebalance runs
from leaving Empty or Stable to the Stable generation its leader's SyncGroup persists, and counts once; a consumer
group's from its new group epoch to every member reconciled."""

from __future__ import annotations

from groupcoord.coordinator.records import GroupMetadataRecord
from groupcoord.coordinator.result import CoordinatorResult
from groupcoord.group.consumer_group import ConsumerGroupState
from groupcoord.log.memory import InMemoryRecordLog
from groupcoord.metrics.loop_instruments import LoopCounter, LoopHistogram
from groupcoord.metrics.record_watch import CLASSIC, CONSUMER, REBALANCE_BUCKETS, RecordWatch
from groupcoord.protocol.errors import Errors
from tests.coordinator.consumer_context import ConsumerGroupContext, T, parts
from tests.coordinator.context import INITIAL_DELAY_MS, CoordinatorTestContext
from tests.narrowing import present


def test_a_classic_rebalance_counts_once_from_its_start_to_its_stable_generation() -> None:
    ctx = CoordinatorTestContext(InMemoryRecordLog())
    rebalances = LoopHistogram("r", "r", "type", buckets=REBALANCE_BUCKETS)
    commits = LoopCounter("c", "c", "type")
    watch = RecordWatch(ctx.coordinator, rebalances=rebalances, offset_commits=commits, clock=lambda: ctx.now)
    absorb = ctx.absorb

    def watched(result: CoordinatorResult) -> CoordinatorResult:
        watch.observe(result.records)
        return absorb(result)

    ctx.absorb = watched  # type: ignore[method-assign]
    a, _ = ctx.join_new("g")                      # t=0: the group leaves Empty
    ctx.sleep(INITIAL_DELAY_MS)                   # the initial delay ends the join phase: generation 1
    ctx.sleep(200)
    ctx.sync("g", 1, a, {a: b"x"})                # t=3.2 s: Stable, persisted
    ctx.commit("g", {("t", 0): 5, ("t", 1): 7}, generation=1, member_id=a)
    b, _ = ctx.join_new("g")                      # t=3.2 s: the group leaves Stable
    ctx.sleep(500)
    assert ctx.heartbeat("g", 1, a).error == Errors.REBALANCE_IN_PROGRESS
    ctx.join("g", a)                              # t=3.7 s: everyone joined: generation 2
    ctx.sleep(300)
    ctx.sync("g", 2, a, {a: b"x", b: b"y"})       # t=4.0 s: Stable again
    ctx.sync("g", 2, b)

    series = rebalances.child(CLASSIC)
    assert (sum(series.counts), round(series.sum, 3)) == (2, 3.2 + 0.8)
    stable = [r for result in ctx.results for r in result.records if isinstance(r, GroupMetadataRecord)][-1:]
    watch.observe(stable)                         # the same generation again (a static member's rejoin): no count
    assert sum(series.counts) == 2
    assert commits.family().samples[0].value == 2


def test_a_consumer_group_rebalance_runs_from_its_new_epoch_to_every_member_reconciled() -> None:
    ctx = ConsumerGroupContext(InMemoryRecordLog())
    rebalances = LoopHistogram("r", "r", "type", buckets=REBALANCE_BUCKETS)
    watch = RecordWatch(ctx.coordinator, rebalances=rebalances, offset_commits=LoopCounter("c", "c", "type"),
                        clock=lambda: ctx.now)
    absorb = ctx.absorb

    def watched(result: CoordinatorResult) -> None:
        watch.observe(result.records)
        absorb(result)

    ctx.absorb = watched  # type: ignore[method-assign]
    ctx.join("a")                                 # t=0: epoch 1, a gets every partition at once
    ctx.sleep(1000)
    ctx.join("b")                                 # t=1 s: epoch 2
    ctx.sleep(500)
    ctx.beat("a", 1, parts(T, 0, 1, 2, 3))        # a is told to revoke t-2, t-3
    ctx.sleep(500)
    ctx.beat("a", 1, parts(T, 0, 1))              # t=2 s: a at epoch 2
    assert ctx.beat("b", 2, {}).assignment == parts(T, 2, 3)
    assert present(ctx.coordinator.consumer_group("g")).state is ConsumerGroupState.STABLE

    series = rebalances.child(CONSUMER)
    assert (sum(series.counts), series.sum) == (2, 1.0)
