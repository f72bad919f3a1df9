"""Shrunk schedules the simulator once failed on, kept as regression tests (each replays in milliseconds).

The first is a core bug (fixed in ``coordinator/admin.py``; see tests/coordinator/test_sim_findings.py); most others
were bugs in the simulated client or in the invariants' definitions, fixed in ``groupcoord/sim``. Each says what went
wrong.
"""

from __future__ import annotations

from typing import Literal

import pytest

from groupcoord.sim import (
    Commit,
    Crash,
    Grow,
    Join,
    Jump,
    Leave,
    Pause,
    Restart,
    Resume,
    Schedule,
    Subscribe,
    Tick,
    assert_schedule_passes,
)

Mode = Literal["eager", "cooperative"]


def test_growth_lost_in_a_failover_is_assigned_after_the_restart() -> None:
    """Seed 968: t0 grows, the rebalance dies with the coordinator, a static leader comes back with
    skip_assignment; partition 5 stayed unowned at quiescence (invariant 4) until the core fix."""
    outcome = assert_schedule_passes(Schedule(
        seed=968, mode="eager", topics=(("t0", 5),), static=True,
        events=(Join("m1", ("t0",)), Tick(3000), Grow("t0", 6), Crash("after-commit"), Leave("m1"),
                Join("m1", ("t0",)))))
    assert outcome.restarts == 1 and outcome.quiescent_checks > 0


def test_a_subscription_change_during_a_join_rejoins_afterwards() -> None:
    """Seed 4: the member changed its subscription while its JoinGroup was parked and kept partitions of a topic
    it no longer subscribes to."""
    assert_schedule_passes(Schedule(seed=4, mode="eager", topics=(("t0", 3), ("t1", 4)),
                                    events=(Join("m1", ("t0", "t1")), Subscribe("m1", ("t1",)))))


def test_a_sync_answered_rebalance_in_progress_rejoins() -> None:
    """Seed 31: the leader paused before syncing, its session ran out, the follower's parked SyncGroup got
    REBALANCE_IN_PROGRESS and the follower must rejoin (it used to wait forever)."""
    assert_schedule_passes(Schedule(seed=31, mode="eager", topics=(("t0", 4), ("t1", 4)), events=(
        Join("m0", ("t0",)), Join("m1", ("t0",)), Tick(3000), Pause("m0"), Tick(5000), Tick(8000))))


def test_a_member_cut_off_for_a_session_timeout_drops_its_partitions() -> None:
    """Seed 280: a cooperative member lost its in-flight request to a crash and was paused past its session; the
    others took its partitions, and on resuming it still owned them until it drops them (librdkafka's rule)."""
    assert_schedule_passes(Schedule(seed=280, mode="cooperative", topics=(("t0", 6),), events=(
        Join("m1", ("t0",)), Tick(4000), Join("m2", ("t0",)), Tick(2000), Crash("before-commit"), Pause("m1"),
        Tick(15_000))))


def test_a_restarted_static_member_fences_its_zombie() -> None:
    """Seed 203: a static member's process is replaced; the old one wakes up and must be fenced, not share."""
    outcome = assert_schedule_passes(Schedule(seed=203, mode="eager", topics=(("t0", 4),), static=True, events=(
        Join("m0", ("t0",)), Tick(4000), Restart("m0"), Tick(4000))))
    assert outcome.quiescent_checks > 0


def test_a_fenced_static_zombie_stops_instead_of_rejoining_as_a_twin() -> None:
    """Seed 6110 (bench-full): a static zombie woke up after its replacement left, rejoined afresh with the same
    instance id, and a third process with that id was started: twins (a KIP-345 misconfiguration) shared
    partitions. A fenced static zombie now stops, as a real one does once its replacement exists."""
    assert_schedule_passes(Schedule(seed=6110, mode="cooperative", topics=(("t0", 4),), static=True, events=(
        Join("m0", ("t0",)), Tick(5500), Restart("m0"), Leave("m0"), Tick(15_500), Resume("m0~"), Tick(3000),
        Join("m1", ("t0",)), Join("m0", ("t0",)))))


# Seeds 353, 358, 634 and 767 (issue 26): a static member closes (its session is left to run out) and comes back
# under the same instance id with another subscription. The group is Stable and the selected protocol does not change,
# so the coordinator handed back the old assignment without a rebalance (Kafka's rule). The member must refuse an
# assignment outside its subscription and rejoin, as Kafka's ConsumerCoordinator.onJoinComplete does; it used to keep
# the partitions of the topic it had dropped (invariant 4). Since the campaign's findings below, the coordinator
# rebalances as soon as such a member rejoins (a kept difference from Kafka), so these schedules no longer reach the
# member's check, which tests/member/test_protocol_machine.py keeps testing (it is what protects a groupcoord member
# against Kafka's own coordinator).

def test_a_static_member_back_with_fewer_topics_drops_the_topic_it_left() -> None:
    """Seed 353: t0 and t1, then t0 alone; m2 kept t1-2."""
    assert_schedule_passes(Schedule(seed=353, mode="eager", topics=(("t0", 6), ("t1", 4)), static=True, events=(
        Join("m2", ("t0", "t1")), Tick(3875), Leave("m2"), Join("m2", ("t0",)))))


def test_a_static_member_back_on_another_topic_takes_the_new_one() -> None:
    """Seed 358: t0, then t1; m0 kept t0-1 and t0-2."""
    assert_schedule_passes(Schedule(seed=358, mode="eager", topics=(("t0", 6), ("t1", 2)), static=True, events=(
        Join("m0", ("t0",)), Tick(3000), Leave("m0"), Join("m0", ("t1",)))))


def test_a_static_member_back_on_a_larger_topic_gets_all_of_it() -> None:
    """Seed 634: t1, then t0 (more partitions than t1 had); m0 kept t1-2."""
    assert_schedule_passes(Schedule(seed=634, mode="eager", topics=(("t0", 6), ("t1", 4)), static=True, events=(
        Join("m0", ("t1",)), Tick(3000), Leave("m0"), Join("m0", ("t0",)))))


def test_a_static_member_back_with_one_of_two_topics_keeps_only_that_one() -> None:
    """Seed 767: t0 and t1, then t1 alone; m1 kept t0-1."""
    assert_schedule_passes(Schedule(seed=767, mode="eager", topics=(("t0", 4), ("t1", 4)), static=True, events=(
        Join("m1", ("t0", "t1")), Tick(4000), Leave("m1"), Join("m1", ("t1",)))))


@pytest.mark.parametrize("mode", ["eager", "cooperative"])
def test_a_static_follower_back_on_another_topic_rejoins_into_a_rebalance(mode: Mode) -> None:
    """The companion of the four above with a follower. Under Kafka's rule the coordinator stored its new metadata
    without a rebalance and handed back its old assignment; its rejoin carried a generation in its subscription, so
    the stored metadata no longer matched and the coordinator rebalanced (no endless refuse-and-rejoin loop). Now the
    first JoinGroup rebalances."""
    assert_schedule_passes(Schedule(seed=0, mode=mode, topics=(("t0", 4), ("t1", 4)), static=True, events=(
        Join("m0", ("t0",)), Join("m1", ("t0",)), Tick(4000), Leave("m1"), Join("m1", ("t1",)), Tick(4000))))


# Findings of the first 100,000-schedule campaign (issue 26 §3, commit 5d3c235).
#
# A static member back with MORE topics (seeds 4549, 4853 and 5540): its old assignment fits the new subscription, so
# it accepts it, and under Kafka's rule (no rebalance unless the selected protocol changes) the new topic stayed
# unowned. The coordinator now rebalances when a static member rejoins a Stable group with another set of topics: a
# kept difference from Kafka (coordinator/join.py ``_keeps_the_generation``, docs/compatibility.md; unit tests in
# tests/coordinator/test_static_membership.py).

def test_a_static_member_back_with_more_topics_gets_the_new_one() -> None:
    """Seed 4549 (eager): t0, then t0 and t1; t1 stayed unowned with the group Stable (invariant 4)."""
    assert_schedule_passes(Schedule(seed=4549, mode="eager", topics=(("t0", 5), ("t1", 3)), static=True, events=(
        Join("m0", ("t0",)), Tick(3750), Leave("m0"), Join("m0", ("t0", "t1")))))


def test_a_cooperative_static_member_back_with_more_topics_gets_the_new_one() -> None:
    """Seed 4853 (cooperative): the same four events, one partition per topic; t1-0 stayed unowned."""
    assert_schedule_passes(Schedule(seed=4853, mode="cooperative", topics=(("t0", 1), ("t1", 1)), static=True,
                                    events=(Join("m2", ("t0",)), Tick(3000), Leave("m2"), Join("m2", ("t0", "t1")))))


def test_a_cooperative_static_member_back_with_a_smaller_new_topic_gets_it() -> None:
    """Seed 5540 (cooperative): the same with two partitions of t0 and one of t1; t1-0 stayed unowned."""
    assert_schedule_passes(Schedule(seed=5540, mode="cooperative", topics=(("t0", 2), ("t1", 1)), static=True,
                                    events=(Join("m1", ("t0",)), Tick(3750), Leave("m1"), Join("m1", ("t0", "t1")))))


@pytest.mark.parametrize("mode", ["eager", "cooperative"])
def test_a_static_follower_back_with_more_topics_gets_the_new_one(mode: Mode) -> None:
    """The companion of the three above with a follower (written, not found): the leader's own view of the metadata
    does not change (it assigned t0 only), so neither the leader nor the follower, whose old assignment fits, would
    rejoin; t1 stayed unowned under Kafka's rule."""
    assert_schedule_passes(Schedule(seed=0, mode=mode, topics=(("t0", 4), ("t1", 2)), static=True, events=(
        Join("m0", ("t0",)), Join("m1", ("t0",)), Tick(8000), Leave("m1"), Join("m1", ("t0", "t1")), Tick(4000))))


# A subscription change during the 100 ms backoff after NOT_COORDINATOR (seeds 5229 and 4085): the member is Stable,
# has nothing in flight and owns what it owned, with a rejoin pending at the end of the backoff. Invariant 4's
# quiescence says "no rejoin pending" but did not check it, so coverage was checked in that instant. A checker bug,
# fixed in groupcoord/sim/invariants.py (tests/sim/test_invariants_bite.py shows the check).

def test_a_member_that_drops_a_topic_while_backing_off_releases_it() -> None:
    """Seed 5229 (eager, dynamic): a commit lands, the coordinator dies before answering it (NOT_COORDINATOR, the
    member backs off), and the member drops t0 in that backoff; it was seen as quiescent still owning t0-0."""
    assert_schedule_passes(Schedule(seed=5229, mode="eager", topics=(("t0", 1), ("t1", 4)), events=(
        Join("m0", ("t0", "t1")), Tick(4000), Crash("after-commit"), Jump(1500), Subscribe("m0", ("t1",)))))


def test_a_member_that_adds_a_topic_while_backing_off_gets_it() -> None:
    """Seed 4085 (cooperative, dynamic): the same with a commit lost before it was durable, and a topic added in the
    backoff; t0 was seen as unowned at quiescence."""
    assert_schedule_passes(Schedule(seed=4085, mode="cooperative", topics=(("t0", 2), ("t1", 1)), events=(
        Join("m4", ("t1",)), Jump(2000), Tick(1000), Tick(2000), Crash("before-commit"), Tick(5000),
        Subscribe("m4", ("t0", "t1")))))


# A static member restarted while a rebalance is being prepared (seeds 7552 and 9723, cooperative): its replacement
# joins as a new process that reports no owned partitions, so the leader hands the old process's partitions to the
# other member in the same generation, as Kafka's coordinator and cooperative assignors do; the old process, resumed
# at once, still held them (invariant 1). It is fenced and stops at its next request. The invariant was too strong:
# a zombie the coordinator no longer counts as a member is left out of it (groupcoord/sim/invariants.py).

def test_a_zombie_replaced_during_a_rebalance_is_fenced_not_a_co_owner() -> None:
    """Seed 7552: m1 owns t0; m0 joins, m1 is restarted before the rebalance completes; m1~ resumes holding t0-0,
    which m0 owns in generation 2."""
    assert_schedule_passes(Schedule(seed=7552, mode="cooperative", topics=(("t0", 3), ("t1", 2)), static=True,
                                    events=(Join("m1", ("t0",)), Tick(3000), Join("m0", ("t0", "t1")),
                                            Restart("m1"))))


def test_a_zombie_replaced_during_a_rebalance_on_two_topics_is_fenced_not_a_co_owner() -> None:
    """Seed 9723: the same with both members on t0 and t1."""
    assert_schedule_passes(Schedule(seed=9723, mode="cooperative", topics=(("t0", 1), ("t1", 3)), static=True,
                                    events=(Join("m1", ("t0", "t1")), Tick(1000), Tick(2000),
                                            Join("m2", ("t0", "t1")), Restart("m1"))))


def test_a_static_member_restarted_before_its_cooperative_follow_up_leaves_nothing_unowned() -> None:
    """Seed 87994 of the 100,000-schedule campaign at ae5651a (cooperative, static, shrunk from 40 events to 14): the
    cooperative leader withheld t0-2, which moved away from m1, for one round; m1's process stopped before it revoked
    t0-2 and rejoined, and its restart took the old assignment back in the Stable group without a rebalance (Kafka's
    rule), so nobody started the follow-up and t0-2 stayed unowned (invariant 4). A static member's restart now
    rebalances a Stable group whose assignment leaves partitions unowned (coordinator/join.py)."""
    assert_schedule_passes(Schedule(seed=87994, mode="cooperative", topics=(("t0", 5),), static=True, events=(
        Join("m0", ("t0",)), Join("m2", ("t0",)), Join("m1", ("t0",)), Tick(3000), Leave("m0"), Tick(11000),
        Tick(3000), Leave("m2"), Tick(1000), Join("m0", ("t0",)), Tick(1000), Leave("m1"), Join("m2", ("t0",)),
        Join("m1", ("t0",)))))


def test_consumer_group_growth_lost_in_a_failover_is_assigned_after_the_restart() -> None:
    """Seed 20117 (consumer protocol): t1 grows while a crash is armed, so the group epoch bumped for it dies with
    the coordinator; the new one loaded the group Stable with a target for two partitions and t1-2 stayed unowned at
    convergence (invariant 11) until the core fix (``consumer_membership.target_misses_partitions``; see
    tests/coordinator/test_sim_findings.py)."""
    outcome = assert_schedule_passes(Schedule(
        seed=20117, mode='eager', topics=(('t0', 3), ('t1', 2)),
        events=(Join(member='m1', topics=('t1',)), Crash(point='before-commit'), Grow(topic='t1', partitions=3)),
        static=False, protocol='consumer'))
    assert outcome.restarts == 1 and outcome.quiescent_checks > 0


def test_a_consumer_probe_is_newer_than_the_epoch_the_coordinator_holds() -> None:
    """Seed 22420 (consumer protocol; a bug in the simulated client): the answer that moved the member to epoch 2
    was lost in an after-commit crash, so the member still heard epoch 1; its "epoch + 1" probe named epoch 2, the
    member's real epoch, and was rightly accepted, and its huge offset then broke invariant 2. A probe now names
    the epoch after the one the coordinator holds."""
    outcome = assert_schedule_passes(Schedule(
        seed=22420, mode='eager', topics=(('t0', 5),),
        events=(Join(member='m0', topics=('t0',)), Tick(ms=5000), Grow(topic='t0', partitions=7), Tick(ms=500),
                Crash(point='after-commit'), Tick(ms=500), Commit(member='m0', shift=1), Tick(ms=5000)),
        static=True, protocol='consumer'))
    assert outcome.stale_commits_rejected == 1
