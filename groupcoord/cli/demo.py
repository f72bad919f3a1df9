"""``groupcoord demo``: the coordinator core and three members on a manual clock, in one process, no I/O.

Three consumers join a group; one pauses (a long GC) past its session timeout; each generation's members, leader and
assignment are printed. The members are the real member protocol (:class:`~groupcoord.member.protocol_machine.
MemberMachine`, which ``GroupMember`` drives too): KIP-394's two-step join, the leader assigning with kafka-python's
``roundrobin`` (as a ``GroupMember`` leader does), SyncGroup, heartbeats every 3 s, and a rejoin on
REBALANCE_IN_PROGRESS. This module is only the shell that carries their requests to the coordinator.
"""

from __future__ import annotations

import argparse
import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from groupcoord.coordinator import CoordinatorConfig, CoordinatorResult, GroupCoordinator, ManualClock
from groupcoord.group.member import Token
from groupcoord.member.heartbeat import HeartbeatTiming
from groupcoord.member.leader_assignment import assign_as_leader
from groupcoord.member.protocol_machine import (
    AssignAsLeader,
    MachineConfig,
    MemberMachine,
    Output,
    PartitionsAssigned,
    Send,
)
from groupcoord.protocol import Errors, GroupResponse, JoinGroupRequest, JoinGroupResponse

GROUP = "demo-group"
TOPIC = "events"
PARTITIONS = 6
SESSION_MS = 10_000
HEARTBEAT_MS = 3_000
STEP_MS = 1_000


def register(subparsers: Any, parent: argparse.ArgumentParser) -> None:
    """Add the ``demo`` subcommand."""
    parser = subparsers.add_parser(
        "demo", parents=[parent], help="show three members joining a group and one failing, on a manual clock",
        description="Three members join a group on a manual clock; one pauses past its session timeout; each "
                    "generation's members, leader and assignment are printed.")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    if not args.debug:  # the demo prints its own timeline; INFO lines of the core and the members would interleave
        for name in ("groupcoord.coordinator", "groupcoord.member"):
            logging.getLogger(name).setLevel(logging.WARNING)
    Demo().run()
    return 0


@dataclass
class DemoMember:
    """One consumer: its name, its protocol machine, and whether it is paused."""

    name: str
    machine: MemberMachine
    paused: bool = False


class Demo:
    """Runs the scenario and writes what happens through ``out``."""

    def __init__(self, out: Callable[[str], None] = print) -> None:
        self.out = out
        self.clock = ManualClock()
        self._ids = itertools.count(1)
        self.coordinator = GroupCoordinator(CoordinatorConfig(initial_rebalance_delay_ms=3000),
                                            member_id_factory=lambda prefix: f"{prefix}-{next(self._ids)}")
        self._tokens = itertools.count(1)
        self._pending: dict[Token, tuple[DemoMember, int]] = {}  # coordinator token -> (member, machine request id)
        timing = HeartbeatTiming(session_timeout_ms=SESSION_MS, heartbeat_interval_ms=HEARTBEAT_MS,
                                 rebalance_timeout_ms=SESSION_MS)
        self.members = [DemoMember(name, MemberMachine(MachineConfig(
            group_id=GROUP, timing=timing, protocols=("roundrobin",), topics=(TOPIC,), client_id=name),
            clock=self.clock.now_ms)) for name in ("consumer-a", "consumer-b", "consumer-c")]
        self.shown_generations: set[int] = set()

    def log(self, message: str) -> None:
        """One timeline line."""
        self.out(f"t={self.clock.now_ms() / 1000:6.1f}s  {message}")

    # --- the shell: requests to the coordinator, responses and outputs back ----------------------------------
    def _carry(self, member: DemoMember, outputs: list[Output]) -> None:
        for output in outputs:
            if isinstance(output, Send):
                if isinstance(output.request, JoinGroupRequest):
                    self.log(f"{member.name}: JoinGroup as {output.request.member_id or 'a new member'} "
                             f"({output.request.reason})")
                token = next(self._tokens)
                self._pending[token] = (member, output.request_id)
                self._deliver(self.coordinator.handle(output.request, self.clock.now_ms(), token))
            elif isinstance(output, AssignAsLeader):
                self.log(f"{member.name}: leads generation {member.machine.generation.generation_id}; assigns "
                         f"{PARTITIONS} partitions with {output.protocol}")
                assignments = assign_as_leader(output.protocol, output.members, {TOPIC: PARTITIONS})
                self._carry(member, member.machine.assigned(assignments))
            elif isinstance(output, PartitionsAssigned):
                self._show_generation_when_synced()

    def _deliver(self, result: CoordinatorResult) -> None:
        for token, response in result.responses:
            member, request_id = self._pending.pop(token)
            if not member.paused:  # a paused process reads nothing
                self._on_response(member, request_id, response)

    def _on_response(self, member: DemoMember, request_id: int, response: GroupResponse) -> None:
        if isinstance(response, JoinGroupResponse) and response.error == Errors.MEMBER_ID_REQUIRED:
            self.log(f"{member.name}: MEMBER_ID_REQUIRED, the coordinator names it {response.member_id}")
        elif getattr(response, "error", Errors.NONE) == Errors.REBALANCE_IN_PROGRESS:
            self.log(f"{member.name}: {type(response).__name__.removesuffix('Response')} -> REBALANCE_IN_PROGRESS")
        self._carry(member, member.machine.on_response(request_id, response))

    def _show_generation_when_synced(self) -> None:
        group = self.coordinator.group(GROUP)
        if group is None or group.generation_id in self.shown_generations:
            return
        active = [m for m in self.members if m.machine.generation.member_id in group.members]
        if any(not m.machine.stable or m.machine.generation.generation_id != group.generation_id for m in active):
            return
        self.shown_generations.add(group.generation_id)
        leader = next(m.name for m in active if m.machine.generation.member_id == group.leader_id)
        self.out("")
        self.out(f"  generation {group.generation_id}: {len(active)} members, leader {leader}")
        for m in active:
            partitions = ", ".join(f"{tp.topic}-{tp.partition}" for tp in sorted(m.machine.owned))
            self.out(f"    {m.name:<11} ({m.machine.generation.member_id:<13}) {partitions}")
        self.out("")

    # --- the scenario ------------------------------------------------------------------------------------------
    def tick(self) -> None:
        """One second passes: the coordinator's timers fire; every running member heartbeats when due and polls."""
        self.clock.advance(STEP_MS)
        group = self.coordinator.group(GROUP)
        before = set(group.members) if group is not None else set()
        self._deliver(self.coordinator.advance(self.clock.now_ms()))
        group = self.coordinator.group(GROUP)
        for member in self.members:
            gone = member.machine.generation.member_id in before - set(group.members if group is not None else ())
            if member.paused and gone:
                self.log(f"coordinator: {member.name}'s session expired; it is removed and the group rebalances")
        for member in self.members:
            if not member.paused:
                self._carry(member, member.machine.on_time())
                self._carry(member, member.machine.poll())

    def run(self) -> None:
        """Three members join; consumer-c pauses past its session timeout; the others get a new generation."""
        self.out(f"groupcoord demo: group {GROUP!r}, topic {TOPIC!r} with {PARTITIONS} partitions, "
                 f"session timeout {SESSION_MS // 1000}s, manual clock")
        self.out("")
        for member in self.members:
            self._carry(member, member.machine.poll())
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
        self.log(f"group is {group.state.value} at generation {group.generation_id} with {group.size} members")
