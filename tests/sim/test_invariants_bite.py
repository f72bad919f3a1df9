"""Every invariant can fail: each test breaks one thing on purpose (in the coordinator, the log or the simulated
leader) and checks that the simulator reports exactly that invariant, with a short replayable schedule."""

from __future__ import annotations

from collections.abc import Mapping
from uuid import UUID

import pytest

import groupcoord.coordinator.coordinator as coordinator_module
import groupcoord.sim as sim
import groupcoord.sim.world as world_module
from groupcoord.assignors.algorithms import Group, Key, assign
from groupcoord.coordinator import consumer_membership, consumer_offsets, hard_state, offsets
from groupcoord.coordinator.consumer_epochs import NO_PARTITION_CHECK
from groupcoord.coordinator.context import CoordinatorContext
from groupcoord.coordinator.records import OffsetCommitRecord, OffsetCommits
from groupcoord.group.consumer_group import NO_OWNER_EPOCH, ConsumerGroup
from groupcoord.group.group import ClassicGroup
from groupcoord.group.metadata import GroupMetadataValue
from groupcoord.log.base import LoadedLog
from groupcoord.log.memory import InMemoryRecordLog
from groupcoord.sim import Commit, Crash, Join, Pause, Resume, Schedule, Subscribe, Tick, leader, run_schedule
from groupcoord.sim.consumer import SimConsumer
from groupcoord.sim.member import SimMember
from groupcoord.sim.world import World

TWO_MEMBERS = (Join("m0", ("t0",)), Join("m1", ("t0",)), Tick(8000), Tick(8000))


def _schedule(*events: sim.Event, mode: sim.events.Mode = "eager") -> Schedule:
    return Schedule(seed=0, mode=mode, topics=(("t0", 4),), events=events)


def test_accepting_commits_of_any_generation_breaks_invariant_3(monkeypatch: pytest.MonkeyPatch) -> None:
    """A coordinator that forgets the generation check: a seeded run finds it, the shrinker cuts the schedule down,
    and the printed schedule replays the failure."""
    monkeypatch.setattr(offsets, "throw_if_illegal_generation", lambda group, generation: None)
    failing = next(o for o in (run_schedule(sim.generate(seed)) for seed in range(40)) if not o.ok)
    assert failing.invariant == "3"
    shrunk = sim.shrink_failure(failing, max_runs=300)
    assert shrunk.invariant == "3"
    assert len(shrunk.schedule.events) <= 6 < len(failing.schedule.events)
    report = sim.failure_report(failing, shrunk)
    assert f"seed={failing.schedule.seed}" in report and "invariant 3" in report
    printed = report.splitlines()[-1].strip()
    replayed = eval(printed, vars(sim))  # the report's last line is the schedule, as Python
    assert replayed == shrunk.schedule
    with pytest.raises(AssertionError, match="invariant 3"):
        sim.assert_schedule_passes(replayed)


def test_a_leader_that_assigns_a_partition_twice_breaks_invariant_1(monkeypatch: pytest.MonkeyPatch) -> None:
    def everything_to_everyone(group: Group, *, cooperative: bool) -> dict[str, set[Key]]:
        return {m.member_id: {p.key for p in group.assignable if p.topic in m.topics} for m in group.members}

    monkeypatch.setattr(leader, "plan", everything_to_everyone)
    outcome = run_schedule(_schedule(*TWO_MEMBERS))
    assert outcome.invariant == "1", outcome.message


def _without_partition_0(group: Group, name: str) -> dict[Key, str]:
    """The real algorithm's plan without t0-0."""
    return {key: member for key, member in assign(group, name).items() if key != ("t0", 0)}


def test_a_leader_that_forgets_a_partition_breaks_invariant_4(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real algorithm's plan without t0-0."""
    monkeypatch.setattr(leader, "assign", _without_partition_0)
    outcome = run_schedule(_schedule(*TWO_MEMBERS))
    assert outcome.invariant == "4" and "t0-0 is owned by []" in outcome.message, outcome.message


def test_a_cooperative_leader_that_moves_partitions_at_once_breaks_invariant_2(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Cooperative members running the eager ``sticky`` algorithm: a partition that moves goes to its new owner in the
    generation in which its old owner revokes it. The new owner fetches the committed offset before the old owner
    commits its position on revoking, and then commits the older offset it fetched: acknowledged offsets go backwards.
    cooperative-sticky withholds a moving partition until its old owner has revoked it."""
    schedule = Schedule(seed=0, mode="cooperative", topics=(("t0", 4), ("t1", 4)), events=(
        Join("m3", ("t0", "t1")), Join("m2", ("t0",)), Subscribe("m3", ("t0",))))
    assert run_schedule(schedule).ok
    monkeypatch.setattr(leader, "ASSIGNORS", {False: "sticky", True: "sticky"})
    outcome = run_schedule(schedule)
    assert outcome.invariant == "2" and "acknowledged 0 after 1" in outcome.message, outcome.message


def test_offsets_that_stop_advancing_on_replay_break_invariant_2(monkeypatch: pytest.MonkeyPatch) -> None:
    """Replay keeps the first commit of each partition: acknowledged later commits are lost."""
    real_replay = hard_state.HardStateStore._replay_offset

    def keep_first(self: hard_state.HardStateStore, record: OffsetCommitRecord) -> None:
        if record.value is not None and (record.topic, record.partition) in self.offsets(record.group_id):
            return
        real_replay(self, record)

    def keep_first_of_block(self: hard_state.HardStateStore, commits: OffsetCommits) -> None:
        for record in commits.records():
            keep_first(self, record)

    monkeypatch.setattr(hard_state.HardStateStore, "_replay_offset", keep_first)
    monkeypatch.setattr(hard_state.HardStateStore, "replay_offsets", keep_first_of_block)  # commits come as blocks
    outcome = run_schedule(_schedule(*TWO_MEMBERS, Tick(8000), Commit("m0")))
    assert outcome.invariant == "2", outcome.message


class ForgetfulLog(InMemoryRecordLog):
    """Loses its last batch on load, as a log whose commits were not durable would."""

    def load(self) -> LoadedLog:
        loaded = super().load()
        last = len(self.batches[-1]) if self.batches else 0
        return LoadedLog(loaded.records[:len(loaded.records) - last], loaded.version, loaded.epoch)


def test_a_log_that_loses_a_batch_breaks_invariant_6() -> None:
    outcome = run_schedule(_schedule(*TWO_MEMBERS, Crash("idle")), ForgetfulLog)
    assert outcome.invariant == "6", outcome.message


def test_a_load_that_resets_the_generation_breaks_invariant_5(monkeypatch: pytest.MonkeyPatch) -> None:
    real_load = ClassicGroup.from_metadata_value.__func__  # type: ignore[attr-defined]

    def from_generation_zero(cls: type[ClassicGroup], group_id: str, value: GroupMetadataValue) -> ClassicGroup:
        group: ClassicGroup = real_load(cls, group_id, value)
        group.generation_id = 0
        return group

    monkeypatch.setattr(ClassicGroup, "from_metadata_value", classmethod(from_generation_zero))
    outcome = run_schedule(_schedule(*TWO_MEMBERS, Crash("idle")))
    assert outcome.invariant == "5", outcome.message


def test_control_a_zombie_schedule_passes_on_the_real_coordinator() -> None:
    """Control: the same pause and resume pass with the real coordinator (the tests above fail for their bug)."""
    outcome = run_schedule(_schedule(*TWO_MEMBERS, Pause("m0"), Tick(20_000), Resume("m0"), Commit("m0", -1)))
    assert outcome.ok, outcome.message
    assert outcome.stale_commits_rejected >= 1


def test_a_member_with_a_rejoin_pending_is_not_quiescent() -> None:
    """Invariant 4's quiescence includes "no rejoin pending": a member that changed its subscription while backing
    off from a lost coordinator is Stable with nothing in flight, but will rejoin when the backoff ends (seeds 5229
    and 4085 of the first campaign were checked in that instant)."""
    schedule = Schedule(seed=0, mode="eager", topics=(("t0", 2), ("t1", 2)), events=(Join("m0", ("t0",)), Tick(4000)))
    world = World(schedule, InMemoryRecordLog())
    for event in world.schedule.events:
        world.run_event(event)
    member = world.members["m0"]
    assert isinstance(member, SimMember)
    assert world.checker.quiescent(world) and member.owned
    member.retry_at_ms = world.now_ms() + member.timings.retry_backoff_ms  # as after a NOT_COORDINATOR
    member.subscribe(("t1",))
    assert member.rejoin_pending and member.pending == {} and member.owned
    assert not world.checker.quiescent(world)
    world.run_event(Tick(1000))
    assert world.checker.quiescent(world) and {tp.topic for tp in member.owned} == {"t1"}


# --- consumer groups (KIP-848): invariants 7-11 and 3 by member epoch ----------------------------------------------

CONSUMER_PAIR = (Join("m0", ("t0",)), Tick(4000), Join("m1", ("t0",)), Tick(8000), Tick(8000))


def _consumer_schedule(*events: sim.Event, topics: tuple[tuple[str, int], ...] = (("t0", 4),),
                       static: bool = False) -> Schedule:
    return Schedule(seed=0, mode="eager", topics=topics, events=events, static=static, protocol="consumer")


def test_control_consumer_schedules_pass_on_the_real_coordinator() -> None:
    """Control: the schedules below pass with nothing broken (each test breaks exactly one thing)."""
    for schedule in (
            _consumer_schedule(*CONSUMER_PAIR, Commit("m1", 1), Crash("idle"), Tick(4000)),
            _consumer_schedule(Join("m0", ("t0",)), Join("m1", ("t1",)), Tick(4000), Subscribe("m0", ("t1",)),
                               Tick(8000), topics=(("t0", 2), ("t1", 2)))):
        outcome = run_schedule(schedule)
        assert outcome.ok, outcome.message
        assert outcome.quiescent_checks > 0


def test_a_member_that_acknowledges_a_revocation_it_did_not_do_breaks_invariant_7(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A client that reports its revoked partitions gone but keeps consuming them: the coordinator rightly hands
    them on, and two members own them at once."""
    real_reconcile, real_heartbeat = SimConsumer._reconcile, SimConsumer._heartbeat
    kept: dict[str, frozenset[tuple[str, int]]] = {}

    def keep_revoked(self: SimConsumer, assignment: Mapping[UUID, frozenset[int]]) -> None:
        before = self.owned
        real_reconcile(self, assignment)
        kept[self.name] = kept.get(self.name, frozenset()) | (before - self.owned)
        self.owned |= kept[self.name]

    def report_without_kept(self: SimConsumer) -> None:
        owned, self.owned = self.owned, self.owned - kept.get(self.name, frozenset())
        real_heartbeat(self)
        self.owned = owned

    monkeypatch.setattr(SimConsumer, "_reconcile", keep_revoked)
    monkeypatch.setattr(SimConsumer, "_heartbeat", report_without_kept)
    outcome = run_schedule(_consumer_schedule(*CONSUMER_PAIR))
    assert outcome.invariant == "7" and "at the same time" in outcome.message, outcome.message


def test_a_coordinator_that_assigns_unreleased_partitions_breaks_invariant_8(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Reconciliation that takes every partition for free (nobody holds anything): the newcomer is given the
    partitions the first member has not revoked yet."""
    monkeypatch.setattr(ConsumerGroup, "current_partition_epoch", lambda self, topic_id, partition: NO_OWNER_EPOCH)
    outcome = run_schedule(_consumer_schedule(*CONSUMER_PAIR))
    assert outcome.invariant == "8" and "was given to m1-2 while m0-1 had not revoked it" in outcome.message, (
        outcome.message)


def test_a_load_that_resets_the_epochs_breaks_invariant_9(monkeypatch: pytest.MonkeyPatch) -> None:
    """A load that starts every consumer group over at epoch 0 (its members keep theirs)."""
    real_load = consumer_membership.load_consumer_groups

    def load_from_zero(ctx: CoordinatorContext, now_ms: int) -> None:
        for group_id in ctx.hard.consumer_group_ids():
            group = ctx.hard.consumer_group(group_id)
            assert group is not None
            group.set_group_epoch(0)
            group.set_target_assignment_epoch(0)
        real_load(ctx, now_ms)

    monkeypatch.setattr(coordinator_module, "load_consumer_groups", load_from_zero)
    outcome = run_schedule(_consumer_schedule(*CONSUMER_PAIR, Crash("idle")))
    assert outcome.invariant == "9" and "went from epoch 2" in outcome.message, outcome.message


def test_a_member_that_never_sends_its_new_subscription_breaks_invariant_10(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A client that changes its subscription locally but never tells the coordinator: it keeps the partitions
    of the topic it dropped."""
    def subscribe_locally(self: SimConsumer, topics: tuple[str, ...]) -> None:
        self.topics = tuple(sorted(topics))

    monkeypatch.setattr(SimConsumer, "subscribe", subscribe_locally)
    outcome = run_schedule(_consumer_schedule(Join("m0", ("t0",)), Join("m1", ("t1",)), Tick(4000),
                                              Subscribe("m0", ("t1",)), Tick(8000), topics=(("t0", 2), ("t1", 2))))
    assert outcome.invariant == "10" and "m0 owns t0-" in outcome.message, outcome.message


def test_a_server_assignor_that_forgets_a_partition_breaks_invariant_11(monkeypatch: pytest.MonkeyPatch) -> None:
    """The uniform target without t0-0: the group settles with t0-0 unowned."""
    monkeypatch.setattr(world_module, "assign", _without_partition_0)
    outcome = run_schedule(_consumer_schedule(*CONSUMER_PAIR))
    assert outcome.invariant == "11" and "t0-0 is owned by []" in outcome.message, outcome.message


def test_accepting_commits_at_a_newer_member_epoch_breaks_invariant_3(monkeypatch: pytest.MonkeyPatch) -> None:
    """A consumer group's commit check that lets any epoch through: the probe at the member's epoch + 1 is
    accepted."""
    monkeypatch.setattr(consumer_offsets, "validate_offset_commit", lambda group, **_: NO_PARTITION_CHECK)
    outcome = run_schedule(_consumer_schedule(*CONSUMER_PAIR, Commit("m1", 1)))
    assert outcome.invariant == "3", outcome.message
