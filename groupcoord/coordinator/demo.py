"""A demo of the coordinator core on a manual clock: three members join, one pauses past its session timeout,
and each generation's members, leader and assignment are printed.

The members behave like Kafka consumers: KIP-394 two-step join, the leader assigns (round-robin over the
partitions of one topic), everybody syncs, heartbeats every 3 s, and rejoins on REBALANCE_IN_PROGRESS.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

from groupcoord.coordinator import CoordinatorConfig, CoordinatorResult, GroupCoordinator, ManualClock
from groupcoord.group.member import Token
from groupcoord.protocol import (
    Errors,
    GroupResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupProtocol,
    JoinGroupRequest,
    JoinGroupResponse,
    SyncGroupAssignment,
    SyncGroupRequest,
    SyncGroupResponse,
)
from groupcoord.protocol.consumer_protocol import (
    Assignment,
    Subscription,
    TopicPartitions,
    decode_assignment,
    encode_assignment,
    encode_subscription,
)

GROUP = "demo-group"
TOPIC = "events"
PARTITIONS = 6
SESSION_MS = 10_000
HEARTBEAT_MS = 3_000
STEP_MS = 1_000


def round_robin(member_ids: list[str], partitions: int) -> dict[str, bytes]:
    """Deal the topic's partitions to the sorted members in turn (a: 0, 3; b: 1, 4; c: 2, 5)."""
    members = sorted(member_ids)
    owned: dict[str, list[int]] = {m: [] for m in members}
    for partition, member in zip(range(partitions), itertools.cycle(members), strict=False):
        owned[member].append(partition)
    return {m: encode_assignment(Assignment(partitions=(TopicPartitions(TOPIC, tuple(ps)),)))
            for m, ps in owned.items()}


@dataclass
class DemoMember:
    """A simulated consumer: its id, generation, assignment and whether it is paused."""

    name: str
    member_id: str = ""
    generation: int = -1
    partitions: tuple[int, ...] = ()
    paused: bool = False
    waiting: bool = False
    next_heartbeat_ms: int = 0
    leader_of: list[str] = field(default_factory=list)


class Demo:
    """Runs the scenario and writes what happens through ``out``."""

    def __init__(self, out: Callable[[str], None] = print) -> None:
        self.out = out
        self.clock = ManualClock()
        self.coordinator = GroupCoordinator(
            CoordinatorConfig(initial_rebalance_delay_ms=3000),
            member_id_factory=lambda prefix: f"{prefix}-{next(self._ids)}")
        self._ids = itertools.count(1)
        self._tokens = itertools.count(1)
        self._pending: dict[Token, tuple[DemoMember, str]] = {}
        self.members = [DemoMember(name) for name in ("consumer-a", "consumer-b", "consumer-c")]
        self.shown_generations: set[int] = set()

    def log(self, message: str) -> None:
        """One timeline line."""
        self.out(f"t={self.clock.now_ms() / 1000:6.1f}s  {message}")

    # --- plumbing ----------------------------------------------------------------------------------------------
    def _send(self, member: DemoMember, request: object, kind: str) -> None:
        token = next(self._tokens)
        self._pending[token] = (member, kind)
        self._deliver(self.coordinator.handle(request, self.clock.now_ms(), token))  # type: ignore[arg-type]

    def _deliver(self, result: CoordinatorResult) -> None:
        for token, response in result.responses:
            member, kind = self._pending.pop(token)
            self._on_response(member, kind, response)

    def _join(self, member: DemoMember) -> None:
        member.waiting = True
        metadata = encode_subscription(Subscription(topics=(TOPIC,)))
        self._send(member, JoinGroupRequest(
            group_id=GROUP, session_timeout_ms=SESSION_MS, rebalance_timeout_ms=SESSION_MS, member_id=member.member_id,
            protocol_type="consumer", protocols=(JoinGroupProtocol("roundrobin", metadata),), client_id=member.name),
            "join")

    def _on_response(self, member: DemoMember, kind: str, response: GroupResponse) -> None:
        if isinstance(response, JoinGroupResponse):
            self._on_join(member, response)
        elif isinstance(response, SyncGroupResponse):
            member.waiting = False
            if response.error != Errors.NONE:
                self.log(f"{member.name}: SyncGroup -> {response.error.name}, rejoining")
                self._join(member)
                return
            member.partitions = tuple(p for tp in decode_assignment(response.assignment).partitions
                                      for p in tp.partitions)
            member.next_heartbeat_ms = self.clock.now_ms() + HEARTBEAT_MS
            self._show_generation_when_synced()
        elif not isinstance(response, HeartbeatResponse):
            raise TypeError(f"unexpected {type(response).__name__}")
        elif response.error == Errors.REBALANCE_IN_PROGRESS and not member.waiting:
            self.log(f"{member.name}: heartbeat -> REBALANCE_IN_PROGRESS, rejoining")
            self._join(member)
        elif response.error not in (Errors.NONE, Errors.REBALANCE_IN_PROGRESS):
            self.log(f"{member.name}: heartbeat -> {response.error.name}")

    def _on_join(self, member: DemoMember, response: JoinGroupResponse) -> None:
        if response.error == Errors.MEMBER_ID_REQUIRED:
            member.member_id = response.member_id
            self.log(f"{member.name}: MEMBER_ID_REQUIRED, joins again as {member.member_id}")
            self._join(member)
            return
        if response.error != Errors.NONE:
            self.log(f"{member.name}: JoinGroup -> {response.error.name}")
            member.waiting = False
            return
        member.generation = response.generation_id
        assignments: tuple[SyncGroupAssignment, ...] = ()
        if response.leader == member.member_id:
            ids = [m.member_id for m in response.members]
            assignments = tuple(SyncGroupAssignment(m, a) for m, a in round_robin(ids, PARTITIONS).items())
            self.log(f"{member.name}: leads generation {response.generation_id}; assigns {PARTITIONS} partitions")
        self._send(member, SyncGroupRequest(group_id=GROUP, generation_id=response.generation_id,
                                            member_id=member.member_id, assignments=assignments), "sync")

    def _show_generation_when_synced(self) -> None:
        group = self.coordinator.group(GROUP)
        if group is None or group.generation_id in self.shown_generations:
            return
        active = [m for m in self.members if m.member_id in group.members]
        if any(m.waiting or m.generation != group.generation_id for m in active):
            return
        self.shown_generations.add(group.generation_id)
        leader = next(m.name for m in active if m.member_id == group.leader_id)
        self.out("")
        self.out(f"  generation {group.generation_id}: {len(active)} members, leader {leader}")
        for m in active:
            partitions = ", ".join(f"{TOPIC}-{p}" for p in m.partitions)
            self.out(f"    {m.name:<11} ({m.member_id:<13}) {partitions}")
        self.out("")

    # --- the scenario ------------------------------------------------------------------------------------------
    def tick(self) -> None:
        """One second passes: timers fire, live members heartbeat when due."""
        self.clock.advance(STEP_MS)
        self._deliver(self.coordinator.advance(self.clock.now_ms()))
        group = self.coordinator.group(GROUP)
        for member in self.members:
            if member.paused and member.generation >= 0 and group is not None and not group.has(member.member_id):
                self.log(f"coordinator: {member.name}'s session expired; it is removed and the group rebalances")
                member.generation = -1
        for member in self.members:
            if member.paused or member.waiting or member.generation < 0:
                continue
            if self.clock.now_ms() >= member.next_heartbeat_ms:
                member.next_heartbeat_ms = self.clock.now_ms() + HEARTBEAT_MS
                self._send(member, HeartbeatRequest(group_id=GROUP, generation_id=member.generation,
                                                    member_id=member.member_id), "heartbeat")

    def run(self) -> None:
        """Three members join; consumer-c pauses past its session timeout; the others get a new generation."""
        self.out(f"groupcoord demo: group {GROUP!r}, topic {TOPIC!r} with {PARTITIONS} partitions, "
                 f"session timeout {SESSION_MS // 1000}s, manual clock")
        self.out("")
        for member in self.members:
            self.log(f"{member.name}: JoinGroup")
            self._join(member)
        while 1 not in self.shown_generations:
            self.tick()
        for _ in range(5):
            self.tick()
        paused = self.members[2]
        paused.paused = True
        self.log(f"{paused.name}: pauses (a long GC) and stops heartbeating")
        while 2 not in self.shown_generations:
            self.tick()
        group = self.coordinator.group(GROUP)
        assert group is not None
        self.log(f"group is {group.state.value} at generation {group.generation_id} with "
                 f"{group.size} members")


def run_demo(out: Callable[[str], None] = print) -> None:
    """Run the demo, writing lines through ``out``."""
    Demo(out).run()
