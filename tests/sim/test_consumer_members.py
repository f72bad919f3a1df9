"""The simulated consumer-protocol member (KIP-848) against the real core, one behaviour at a time: each schedule
passes every invariant, and the world shows the path it took (fenced by a session or a rebalance timeout, a static
member's temporary leave)."""

from __future__ import annotations

import pytest

from groupcoord.log.memory import InMemoryRecordLog
from groupcoord.sim import Event, Join, Leave, Pause, Resume, Schedule, Stall, Tick, run_schedule
from groupcoord.sim.consumer import SimConsumer
from groupcoord.sim.world import GROUP_ID, World


def _run(*events: Event, static: bool = False) -> World:
    schedule = Schedule(seed=0, mode="eager", topics=(("t0", 4),), events=events, static=static,
                        protocol="consumer")
    world = World(schedule, InMemoryRecordLog())
    for event in schedule.events:
        world.run_event(event)
    assert run_schedule(schedule).ok
    return world


def _member(world: World, name: str) -> SimConsumer:
    member = world.members[name]
    assert isinstance(member, SimConsumer)
    return member


def test_two_members_split_a_topic_after_the_first_revokes() -> None:
    world = _run(Join("m0", ("t0",)), Tick(4000), Join("m1", ("t0",)), Tick(8000))
    assert _member(world, "m0").owned | _member(world, "m1").owned == {("t0", p) for p in range(4)}
    assert len(_member(world, "m0").owned) == len(_member(world, "m1").owned) == 2
    assert world.checker.quiescent(world)


def test_a_paused_member_is_fenced_by_its_session_and_rejoins_when_it_resumes() -> None:
    world = _run(Join("m0", ("t0",)), Join("m1", ("t0",)), Tick(8000), Pause("m0"), Tick(12_000))
    group = world.coordinator.consumer_group(GROUP_ID)
    assert group is not None and not group.has_member(_member(world, "m0").member_id)
    assert _member(world, "m1").owned == {("t0", p) for p in range(4)}
    world.run_event(Resume("m0"))
    world.run_event(Tick(8000))
    assert group.has_member(_member(world, "m0").member_id) and len(_member(world, "m0").owned) == 2


def test_a_stalled_member_that_does_not_leave_is_fenced_by_its_rebalance_timeout(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the client's own poll-interval check, the coordinator's rebalance timeout fences the member that
    keeps heartbeating but never revokes; its partition goes to the newcomer only then."""
    monkeypatch.setattr(SimConsumer, "_leave_stale", SimConsumer._heartbeat)  # heartbeat on instead
    world = _run(Join("m0", ("t0",)), Tick(4000), Stall("m0"), Join("m1", ("t0",)), Tick(20_000))
    assert _member(world, "m1").owned == frozenset()  # m0 still holds what it must revoke
    world.run_event(Tick(20_000))
    group = world.coordinator.consumer_group(GROUP_ID)
    assert group is not None and not group.has_member(_member(world, "m0").member_id)
    assert _member(world, "m1").owned == {("t0", p) for p in range(4)}


def test_a_static_member_leaves_for_a_while_and_its_next_process_gets_its_partitions() -> None:
    world = _run(Join("m0", ("t0",)), Join("m1", ("t0",)), Tick(8000), static=True)
    before = _member(world, "m1").owned
    world.run_event(Leave("m1"))
    group = world.coordinator.consumer_group(GROUP_ID)
    assert group is not None and group.member(_member(world, "m1").member_id) is not None
    assert group.members[_member(world, "m1").member_id].member_epoch == -2
    world.run_event(Join("m1", ("t0",)))
    world.run_event(Tick(4000))
    assert _member(world, "m1").owned == before and len(group.members) == 2
