"""The six invariants of issue 7, checked while a schedule runs.

1. Ownership: among running (not paused) members, eager members of the *same generation* never share a partition;
   cooperative members never share one *at all*. A paused member is a zombie: it cannot act, and what it still
   believes it owns is fenced by its generation and member id on its next request. Processes sharing a
   ``group.instance.id`` count as one identity: whichever joined last takes over the generation and the
   assignment, and the other learns it is fenced only on its next request (KIP-345). A replaced process (a zombie of
   ``events.Restart``) that the coordinator no longer counts as a member is left out once it runs again, until that
   next request stops it: its replacement joined as a new process, reporting no owned partitions, so a cooperative
   leader may hand what the zombie still holds to another member in the same generation, as Kafka's coordinator and
   assignors do (``updateStaticMemberThenRebalanceOrCompleteJoin`` stores the replacement's subscription). Nothing
   but that request can tell the old process, which a real deployment is expected to have killed (KIP-345); its
   commits are fenced (invariant 3). Seeds 7552 and 9723 of the first 100,000-schedule campaign (issue 26 §3)
   checked it with the replacement's partner: a zombie resumed in the same instant still held partitions.
2. Commits: an acknowledged offset (a NONE answer, sent only after its record is durable) is never lost: the live
   hard state holds it or a later acknowledged one, across crashes and replay; and acknowledgements of one partition
   never go backwards.
3. Fencing: an OffsetCommit whose generation is not the group's live generation is rejected for every partition,
   and writes no offset.
4. Coverage at quiescence. The group is *quiescent* when no member is paused, the live group is Stable with no
   SyncGroup outstanding, its members are exactly the running simulated members, each of them is Stable in the
   live generation with nothing in flight and no rejoin pending, and the leader's assignment used the current
   partition counts. Then every partition of every subscribed topic is owned by exactly one member subscribed to
   it. After the last event the world must reach quiescence within a bound.
5. Generations: the persisted generation of the group never decreases; the live one never decreases, except that a
   restart may fall back to the persisted one (a rebalance that was not persisted is forgotten, seed 004).
6. Replay: the live hard state equals the replay of the durable log after every step; a restarted coordinator's
   full load reproduces it too.
Besides, a well-behaved member must only ever get the errors a correct coordinator can give it (``protocol``).

These are the classic protocol's; a consumer group (KIP-848) keeps 2, 3 (by member epoch) and 6, and its own 7-11
(:mod:`groupcoord.sim.consumer_invariants`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Protocol
from uuid import UUID

from groupcoord.coordinator import CoordinatorResult, GroupCoordinator
from groupcoord.coordinator.records import OffsetCommitRecord
from groupcoord.group import GroupState
from groupcoord.protocol.requests import GroupRequest, OffsetCommitRequest
from groupcoord.protocol.responses import GroupResponse, OffsetCommitResponse
from groupcoord.sim.consumer import SimConsumer
from groupcoord.sim.member import Phase, SimMember

Key = tuple[str, str, int]



class World(Protocol):
    """What the checker reads of the simulated world (:class:`groupcoord.sim.world.World`)."""

    @property
    def members(self) -> Mapping[str, SimMember | SimConsumer]:
        """The simulated member processes by name (classic ones only in a classic schedule)."""

    @property
    def coordinator(self) -> GroupCoordinator:
        """The live coordinator."""

    @property
    def shadow(self) -> GroupCoordinator:
        """A coordinator replaying only the durable batches (what a reload would give)."""

    @property
    def counts(self) -> Mapping[str, int]:
        """Partition counts by topic."""

    def topic_ids(self) -> Mapping[str, UUID]:
        """Topic ids by name."""

    def describe(self) -> str:
        """The world's state in one line, for violation messages."""


def classic_members(world: World) -> list[SimMember]:
    """The classic-protocol processes of ``world``, by name."""
    return [m for _, m in sorted(world.members.items()) if isinstance(m, SimMember)]

class InvariantViolation(AssertionError):
    """An invariant broke; ``invariant`` names it ("1".."6", "protocol", "livelock")."""

    def __init__(self, invariant: str, message: str) -> None:
        super().__init__(f"invariant {invariant}: {message}")
        self.invariant = invariant


class Checker:
    """Tracks acknowledged offsets and generations, and checks the invariants of one run."""

    convergence_invariant = "4"
    """The invariant broken when the world does not settle after the last event."""

    def __init__(self) -> None:
        self.acked: dict[Key, int] = {}
        self.live_generation: dict[str, int] = {}
        self.persisted_generation: dict[str, int] = {}
        self.commits_checked = 0
        self.probes_rejected = 0
        self.quiescent_checks = 0

    # --- hooks the world calls ---------------------------------------------------------------------------------
    def on_send(self, world: World, request: GroupRequest) -> None:
        """A member sends ``request`` (before the coordinator handles it); consumer groups' checks use it."""

    def on_answer(self, world: World, request: GroupRequest, response: GroupResponse) -> None:
        """``response`` to ``request`` leaves the coordinator (durable); consumer groups' checks use it."""

    def on_request(self, request: GroupRequest, token: int, live_generation: int | None,
                   result: CoordinatorResult) -> None:
        """Invariant 3, for every OffsetCommit (request ``token``) the coordinator handled."""
        if not isinstance(request, OffsetCommitRequest) or request.generation_id < 0:
            return
        self.commits_checked += 1
        if request.generation_id == live_generation:
            return
        written = [r for r in result.records if isinstance(r, OffsetCommitRecord) and r.group_id == request.group_id]
        response = result.response_for(token)
        errors = ([p.error for t in response.topics for p in t.partitions]
                  if isinstance(response, OffsetCommitResponse) else [])
        if written or not errors or not all(e.is_error for e in errors):
            raise InvariantViolation("3", f"a commit with generation {request.generation_id} was accepted while "
                                          f"the group is at {live_generation}: {errors} {written}")
        self.probes_rejected += 1

    def on_response(self, request: GroupRequest, response: GroupResponse) -> None:
        """Record acknowledged offsets (the response leaves only once its records are durable)."""
        if not isinstance(request, OffsetCommitRequest) or not isinstance(response, OffsetCommitResponse):
            return
        offsets = {(t.name, p.partition): p.offset for t in request.topics for p in t.partitions}
        for topic in response.topics:
            for partition in topic.partitions:
                if partition.error.is_error:
                    continue
                key = (request.group_id, topic.name, partition.partition)
                offset = offsets[topic.name, partition.partition]
                previous = self.acked.get(key)
                if previous is not None and offset < previous:
                    raise InvariantViolation("2", f"{key}: acknowledged {offset} after {previous}")
                self.acked[key] = offset

    def on_restart(self, world: World) -> None:
        """Invariant 6 on the recovery path: the full load equals the durable state."""
        self.live_generation = {g: v.generation_id for g, v in world.coordinator.hard_state().groups}
        loaded, durable = world.coordinator.hard_state(), world.shadow.hard_state()
        if loaded != durable:
            raise InvariantViolation("6", f"loading the log gave {loaded}, the durable batches give {durable}")

    # --- after every step --------------------------------------------------------------------------------------
    def check_step(self, world: World) -> None:
        """Every invariant that holds at any step, and invariant 4 when the world is quiescent."""
        self._check_protocol(world)
        self._check_ownership(world)
        self._check_replay(world)
        self._check_offsets(world)
        self._check_generations(world)
        if self.quiescent(world):
            self.quiescent_checks += 1
            self._check_coverage(world)

    def _check_protocol(self, world: World) -> None:
        for member in world.members.values():
            if member.unexpected:
                raise InvariantViolation("protocol", "; ".join(member.unexpected))

    def _check_ownership(self, world: World) -> None:
        owners: dict[tuple[int, str, int], str] = {}  # processes sharing a group.instance.id are one identity
        for member in classic_members(world):
            name = member.name
            if not member.alive or member.paused:
                continue
            group = world.coordinator.group(member.group_id)
            if member.zombie and (group is None or member.member_id not in group.members):
                continue  # fenced: it learns so on its next request (see invariant 1 in the module docstring)
            identity = member.instance_id or name
            for tp in sorted(member.owned):
                scope = 0 if member.cooperative else member.generation
                other = owners.setdefault((scope, *tp), identity)
                if other != identity:
                    when = "at the same time" if member.cooperative else f"in generation {scope}"
                    raise InvariantViolation("1", f"{tp} is owned by {other} and {name} {when}: {world.describe()}")

    def _check_replay(self, world: World) -> None:
        live, durable = world.coordinator.hard_state(), world.shadow.hard_state()
        if live != durable:
            raise InvariantViolation("6", f"live hard state {live} differs from the durable log's {durable}")

    def _check_offsets(self, world: World) -> None:
        state = world.coordinator.hard_state()
        committed = {(g, t, p): v.offset for g, t, p, v in state.offsets}
        for key, offset in sorted(self.acked.items()):
            held = committed.get(key)
            if held is None or held < offset:
                raise InvariantViolation("2", f"{key}: acknowledged {offset}, the coordinator holds {held}")

    def _check_generations(self, world: World) -> None:
        persisted = {g: v.generation_id for g, v in world.coordinator.hard_state().groups}
        for group_id, generation in persisted.items():
            if generation < self.persisted_generation.get(group_id, -1):
                raise InvariantViolation("5", f"group {group_id}: persisted generation went from "
                                              f"{self.persisted_generation[group_id]} to {generation}")
            self.persisted_generation[group_id] = generation
        for group_id in world.coordinator.group_ids():
            group = world.coordinator.group(group_id)
            assert group is not None
            floor = self.live_generation.get(group_id, 0)
            if group.generation_id < floor:
                raise InvariantViolation("5", f"group {group_id}: live generation {group.generation_id} is below "
                                              f"{floor}")
            self.live_generation[group_id] = group.generation_id

    # --- invariant 4 -------------------------------------------------------------------------------------------
    def quiescent(self, world: World) -> bool:
        """The precise "alive and stable, nothing pending" of invariant 4 (see the module docstring)."""
        running = [m for m in classic_members(world) if m.alive]
        if not running or any(m.paused for m in running):
            return False
        group = world.coordinator.group(running[0].group_id)
        if group is None or not group.is_in(GroupState.STABLE) or group.pending_sync_members:
            return False
        if set(group.members) != {m.member_id for m in running}:
            return False
        for member in running:
            if (member.phase is not Phase.STABLE or member.rejoin_pending or member.generation != group.generation_id
                    or member.pending or member.inbox):
                return False
            if member.is_leader and (member.assigned_with is None or any(
                    world.counts.get(t, 0) != n for t, n in member.assigned_with.items())):
                return False
        return True

    def _check_coverage(self, world: World) -> None:
        running = [m for m in classic_members(world) if m.alive]
        owners: dict[tuple[str, int], list[str]] = defaultdict(list)
        for member in running:
            for topic, partition in member.owned:
                if topic not in member.topics:
                    raise InvariantViolation("4", f"{member.name} owns {topic}-{partition} without subscribing")
                owners[topic, partition].append(member.name)
        for topic in sorted({t for m in running for t in m.topics}):
            for partition in range(world.counts.get(topic, 0)):
                holders = owners.get((topic, partition), [])
                if len(holders) != 1:
                    raise InvariantViolation("4", f"quiescent, yet {topic}-{partition} is owned by {holders}: "
                                                  f"{world.describe()}")
