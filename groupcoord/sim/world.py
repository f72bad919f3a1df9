"""The simulated world: a manual clock, the coordinator core, its record log, and the members, wired as a host.

:class:`World` plays the host's part exactly as the real one does: every result's records are appended to the log
as one batch *before* its responses leave; a record-less result answers at once; after a crash a new
:class:`GroupCoordinator` replays ``log.load()`` and runs ``on_loaded``. Requests in flight when the coordinator
dies are answered NOT_COORDINATOR (the client's view of a dropped connection). Responses travel through a FIFO
queue, so a member's reaction to one response is a new request, never a nested call. For consumer groups (KIP-848)
the world is also the shell that computes target assignments: it answers a ``NeedsTargetAssignment`` with the
uniform assignor once the responses queued before it are delivered, so heartbeats sent meanwhile wait (parked) as
they do while the real shell's assignment job runs, and a crash in between loses the request (the new coordinator
asks again).

A shadow coordinator replays every durable batch as it is written (and restarts from each snapshot), so
invariant 6 is checked after every step without reloading the whole log.
"""

from __future__ import annotations

import itertools
import logging
import uuid
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

from groupcoord.assignment.targets import target_answer, target_group
from groupcoord.assignors.algorithms import assign
from groupcoord.coordinator import (
    CompleteTargetAssignment,
    CoordinatorConfig,
    CoordinatorResult,
    GroupCoordinator,
    ManualClock,
    NeedsTargetAssignment,
    decode_record,
    encode_record,
    error_response,
)
from groupcoord.coordinator.encoded import EncodedRecord
from groupcoord.log.base import RecordLog
from groupcoord.protocol import Errors
from groupcoord.protocol.requests import GroupRequest, OffsetCommitRequest
from groupcoord.protocol.responses import GroupResponse
from groupcoord.sim.consumer import SimConsumer
from groupcoord.sim.consumer_invariants import ConsumerChecker
from groupcoord.sim.events import (
    Commit,
    Crash,
    CrashPoint,
    Event,
    Grow,
    Join,
    Jump,
    Leave,
    Pause,
    Restart,
    Resume,
    Schedule,
    Snapshot,
    Stall,
    Subscribe,
    Tick,
)
from groupcoord.sim.invariants import Checker, InvariantViolation
from groupcoord.sim.member import MemberTimings, SimMember

log = logging.getLogger("groupcoord.sim.world")

GROUP_ID = "g"
SIM_COORDINATOR_CONFIG = CoordinatorConfig(initial_rebalance_delay_ms=3000, min_session_timeout_ms=1000,
                                           max_session_timeout_ms=60_000, consumer_group_session_timeout_ms=10_000,
                                           consumer_group_heartbeat_interval_ms=3000)
"""The classic members ask for a 10 s session and a 3 s heartbeat (``MemberTimings``); consumer groups get the same
from the coordinator."""
TARGET_ASSIGNOR = "uniform"
"""The server assignor the shell runs for consumer groups (the coordinator's default, as in Kafka), with the
driver engine's Python algorithm."""
ZOMBIE_SUFFIX = "~"
"""A replaced process lives on, paused, under its name plus this suffix (see ``events.Restart``)."""
MAX_MICRO_STEPS = 100_000
"""Per time advance: far more wake-ups than any schedule needs; reaching it means members livelock."""


Process = SimMember | SimConsumer
"""A simulated member process: classic or consumer protocol."""


def topic_id(name: str) -> uuid.UUID:
    """The stable id of topic ``name`` (the same in every run and after every restart)."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"groupcoord-sim:{name}")


@dataclass(frozen=True)
class InFlight:
    """A request the coordinator has not answered yet, and who sent it."""

    member: Process
    request: GroupRequest


class World:
    """One run of a schedule on ``log`` (empty at the start), checked by ``checker`` after every step."""

    def __init__(self, schedule: Schedule, log: RecordLog, *, checker: Checker | None = None,
                 timings: MemberTimings | None = None, config: CoordinatorConfig = SIM_COORDINATOR_CONFIG) -> None:
        self.schedule = schedule
        self.log = log
        self.config = config
        self.timings = timings or MemberTimings()
        self.checker = checker or (ConsumerChecker() if schedule.protocol == "consumer" else Checker())
        self.clock = ManualClock(0)
        self.counts: dict[str, int] = dict(schedule.topics)
        self.members: dict[str, Process] = {}
        self.restarts = 0
        self._member_ids = itertools.count(1)
        self._tokens = itertools.count(1)
        self._in_flight: dict[int, InFlight] = {}
        self._queue: deque[tuple[Process, int, GroupResponse]] = deque()
        self._armed: CrashPoint | None = None
        self._targets: list[NeedsTargetAssignment] = []
        self.coordinator = self._new_coordinator()
        self.shadow = self._new_coordinator()
        self._metadata_changed()

    # --- the Transport members talk to -------------------------------------------------------------------------
    def now_ms(self) -> int:
        """Simulated time."""
        return self.clock.now_ms()

    def partition_counts(self) -> Mapping[str, int]:
        """Current topic metadata."""
        return self.counts

    def topic_ids(self) -> Mapping[str, uuid.UUID]:
        """Current topic ids (Metadata's)."""
        return {name: topic_id(name) for name in self.counts}

    @property
    def protocol(self) -> str:
        """The schedule's group protocol."""
        return self.schedule.protocol

    def send(self, member: Process, request: GroupRequest) -> int:
        """Hand ``request`` to the coordinator now; its response is queued once its records are durable."""
        token = next(self._tokens)
        self._in_flight[token] = InFlight(member, request)
        generation = self.live_generation()
        consumers = self.coordinator.consumer_group(getattr(request, "group_id", ""))
        if isinstance(request, OffsetCommitRequest) and consumers is not None:
            known = consumers.member(request.member_id)
            generation = None if known is None else known.member_epoch  # a consumer group's commits name the epoch
        self.checker.on_send(self, request)
        result = self.coordinator.handle(request, self.now_ms(), token)
        self.checker.on_request(request, token, generation, result)
        self._absorb(result)
        return token

    # --- the host's part ---------------------------------------------------------------------------------------
    def _new_coordinator(self) -> GroupCoordinator:
        return GroupCoordinator(self.config, member_id_factory=lambda p: f"{p or 'member'}-{next(self._member_ids)}")

    def _metadata_changed(self) -> None:
        self._absorb(self.coordinator.on_metadata_change(self.counts, self.now_ms(), topic_ids=self.topic_ids()))

    def _absorb(self, result: CoordinatorResult) -> None:
        others = [e for e in result.effects if not isinstance(e, NeedsTargetAssignment)]
        if others:
            raise InvariantViolation("protocol", f"client-side groups got coordinator effects {others}")
        if result.records:
            if self._armed == "before-commit":
                self._crash()
                return
            encoded = [encode_record(r) for r in result.records]
            self.log.append(encoded, expected_version=self.log.version())
            self._replay_into_shadow(encoded)
            if self._armed == "after-commit":
                self._crash()
                return
        for token, response in result.responses:
            assert isinstance(token, int)
            entry = self._in_flight.pop(token, None)
            if entry is None:
                raise InvariantViolation("protocol", f"request {token} answered twice or never asked: {response}")
            self.checker.on_response(entry.request, response)
            self.checker.on_answer(self, entry.request, response)
            self._queue.append((entry.member, token, response))
        self._targets.extend(e for e in result.effects if isinstance(e, NeedsTargetAssignment))

    def target_assignment(self, effect: NeedsTargetAssignment) -> CompleteTargetAssignment:
        """The shell's part for a consumer group: the target of :data:`TARGET_ASSIGNOR` (see :meth:`pump`)."""
        placed = assign(target_group(effect, {}), TARGET_ASSIGNOR)
        rows = [(effect.group_id, member_id, topic, partition) for (topic, partition), member_id in placed.items()]
        return target_answer(effect, rows)

    def _replay_into_shadow(self, encoded: list[EncodedRecord]) -> None:
        for record in encoded:
            self.shadow.replay(decode_record(record))

    def _crash(self) -> None:
        """The coordinator dies; a new one loads the log; requests in flight fail with NOT_COORDINATOR."""
        self._armed = None
        self.restarts += 1
        self._targets.clear()  # the new coordinator asks again for what it still needs
        lost = sorted(self._in_flight.items())
        self._in_flight.clear()
        self.coordinator = self._new_coordinator()
        for record in self.log.load().records:
            self.coordinator.replay(decode_record(record))
        self.checker.on_restart(self)
        for token, entry in lost:
            self._queue.append((entry.member, token, error_response(entry.request, Errors.NOT_COORDINATOR)))
        self._absorb(self.coordinator.on_loaded(self.now_ms()))
        self._metadata_changed()

    def write_snapshot(self) -> None:
        """Write a log snapshot of the live hard state; the shadow restarts from it, as a later load would."""
        encoded = [encode_record(r) for r in self.coordinator.snapshot_records()]
        self.log.write_snapshot(encoded, expected_version=self.log.version())
        self.shadow = self._new_coordinator()
        self._replay_into_shadow(encoded)

    def pump(self) -> None:
        """Deliver queued responses in order (members' reactions queue more) until none is left; the shell answers
        a consumer group's target request only then, so the heartbeats that come meanwhile wait for it (parked)."""
        while True:
            while self._queue:
                member, token, response = self._queue.popleft()
                member.deliver(token, response)
            if not self._targets:
                return
            effect = self._targets.pop(0)
            self._absorb(self.coordinator.complete_target_assignment(self.target_assignment(effect), self.now_ms()))

    def live_generation(self, group_id: str = GROUP_ID) -> int | None:
        """The live coordinator's generation of ``group_id`` (``None`` when it has no such group)."""
        group = self.coordinator.group(group_id)
        return None if group is None else group.generation_id

    # --- time --------------------------------------------------------------------------------------------------
    def advance(self, ms: int, *, jump: bool = False) -> None:
        """Let ``ms`` pass. Normally members act at their own times on the way; a jump fires every coordinator
        timer first and lets members act only at the end."""
        target = self.now_ms() + ms
        if jump:
            self.clock.advance(ms)
            self._absorb(self.coordinator.advance(self.now_ms()))
            self.pump()
        for _ in range(MAX_MICRO_STEPS):
            wake = [target]
            wake.extend(d for m in self.members.values() if (d := m.next_due()) is not None)
            deadline = self.coordinator.next_deadline()
            if deadline is not None:
                wake.append(deadline)
            at = max(self.now_ms(), min(wake))
            self.clock.advance(at - self.now_ms())
            self._absorb(self.coordinator.advance(at))
            self.pump()
            for name in sorted(self.members):
                member = self.members[name]
                due = member.next_due()
                if due is not None and due <= at:
                    member.on_time(at)
                    self.pump()
            if at >= target:
                return
        raise InvariantViolation("livelock", f"more than {MAX_MICRO_STEPS} wake-ups in {ms} ms")

    # --- events ------------------------------------------------------------------------------------------------
    def run_event(self, event: Event) -> None:
        """Apply one event, deliver everything it caused, and check the invariants."""
        armed_before = self._armed is not None
        self._apply(event)
        self.pump()
        for member in list(self.members.values()):
            self._stop_unreleased_twin(member)
        if armed_before and self._armed is not None:
            self._crash()  # the armed crash found no write to land on during the next event: crash idle
            self.pump()
        self.checker.check_step(self)

    def _apply(self, event: Event) -> None:
        member = self.members.get(getattr(event, "member", ""))
        live = member if member is not None and member.alive else None
        if isinstance(event, Join):
            if live is None:
                self._start(event.member, event.topics)
        elif isinstance(event, Restart):
            if live is not None and not event.member.endswith(ZOMBIE_SUFFIX):
                old_zombie = self.members.get(event.member + ZOMBIE_SUFFIX)
                if old_zombie is not None:
                    old_zombie.kill()
                if live.epoch > 0 if isinstance(live, SimConsumer) else live.member_id:
                    live.pause()
                    live.zombie = True
                    self.members[event.member + ZOMBIE_SUFFIX] = live
                else:
                    live.kill()  # see events.Restart: without a member id it would not be a zombie but a twin
                self._start(event.member, live.topics)
        elif isinstance(event, Leave):
            if live is not None:
                live.close()
        elif isinstance(event, Pause):
            if live is not None:
                live.pause()
        elif isinstance(event, Stall):
            if isinstance(live, SimConsumer):
                live.stall()
        elif isinstance(event, Resume):
            if live is not None and (live.paused or (isinstance(live, SimConsumer) and live.stalled)):
                live.resume()
                self.pump()
                live.on_time(self.now_ms())
        elif isinstance(event, Subscribe):
            if live is not None:
                live.subscribe(self._known(event.topics))
        elif isinstance(event, Commit):
            self._commit(live, event.shift)
        elif isinstance(event, Grow):
            if event.partitions > self.counts.get(event.topic, 0):
                self.counts[event.topic] = event.partitions
                self._metadata_changed()
        elif isinstance(event, Crash):
            if event.point == "idle":
                self._crash()
            else:
                self._armed = event.point
        elif isinstance(event, Snapshot):
            self.write_snapshot()
        elif isinstance(event, Tick):
            self.advance(event.ms)
        elif isinstance(event, Jump):
            self.advance(event.ms, jump=True)

    def _stop_unreleased_twin(self, resumed: Process) -> None:
        """A static consumer-protocol zombie that comes back still holding its instance is the instance's member:
        its replacement, which could not join (UNRELEASED_INSTANCE_ID, fatal in Kafka's client), stops for good
        instead of retrying as if its predecessor were dead. A replacement that joined already fenced the zombie."""
        if not (isinstance(resumed, SimConsumer) and resumed.zombie and resumed.alive and not resumed.paused
                and resumed.instance_id is not None):
            return
        twin = self.members.get(resumed.name)
        group = self.coordinator.consumer_group(GROUP_ID)
        holder = None if group is None else group.static_member_id(resumed.instance_id)
        if isinstance(twin, SimConsumer) and twin.alive and twin.epoch == 0 and holder == resumed.member_id:
            twin.kill()

    def _start(self, name: str, topics: tuple[str, ...]) -> None:
        instance_id = name if self.schedule.static else None
        member: Process
        if self.schedule.protocol == "consumer":
            member = SimConsumer(name, GROUP_ID, self._known(topics), member_id=f"{name}-{next(self._member_ids)}",
                                 timings=self.timings, transport=self, instance_id=instance_id)
        else:
            member = SimMember(name, GROUP_ID, self._known(topics), cooperative=self.schedule.mode == "cooperative",
                               timings=self.timings, transport=self, instance_id=instance_id)
        self.members[name] = member
        member.start()

    def _commit(self, member: Process | None, shift: int) -> None:
        if member is None:
            return
        if shift == 0:
            member.commit_now()
            return
        if isinstance(member, SimConsumer):
            if shift < 0:
                member.commit_previous()
                return
            # Newer than the member's epoch in the coordinator, which may be ahead of what the member heard (the
            # answer that moved it on may have been lost in a crash).
            group = self.coordinator.consumer_group(GROUP_ID)
            known = None if group is None else group.member(member.member_id)
            member.probe(max(member.epoch, 0 if known is None else known.member_epoch) + shift)
            return
        current = self.live_generation() or 0
        generation = current + shift if current + shift >= 0 else current + 1
        member.probe(generation)

    def _known(self, topics: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(t for t in topics if t in self.counts) or (min(self.counts),)

    # --- the end -----------------------------------------------------------------------------------------------
    def settle(self, *, step_ms: int = 1000, limit_ms: int = 300_000) -> None:
        """No more events: resume every paused member and let time pass until the group is quiescent (checking
        invariant 4 there), or fail when it does not settle within ``limit_ms``."""
        for name in sorted(self.members):
            self.run_event(Resume(name))
        waited = 0
        while not self.checker.quiescent(self):
            if not any(m.alive for m in self.members.values()):
                return
            if waited >= limit_ms:
                raise InvariantViolation(self.checker.convergence_invariant,
                                         f"the group did not settle within {limit_ms} ms after the last event: "
                                         f"{self.describe()}")
            self.run_event(Tick(step_ms))
            waited += step_ms

    def describe(self) -> str:
        """A one-line picture of the group and the members (for failure messages)."""
        if self.schedule.protocol == "consumer":
            return self._describe_consumers()
        group = self.coordinator.group(GROUP_ID)
        state = "none" if group is None else f"{group.state.value} gen {group.generation_id} {sorted(group.members)}"
        members = "; ".join(
            f"{n}:{m.phase.value}{'/paused' if m.paused else ''} id={m.member_id} gen={m.generation} "
            f"owns={sorted(m.owned)}" for n, m in sorted(self.members.items())
            if m.alive and isinstance(m, SimMember))
        return f"t={self.now_ms()} group[{state}] members[{members}] counts={self.counts}"

    def _describe_consumers(self) -> str:
        group = self.coordinator.consumer_group(GROUP_ID)
        names = {i: n for n, i in self.topic_ids().items()}
        if group is None:
            state = "none"
        else:
            state = f"{group.state.value} epoch {group.group_epoch} target {group.target_assignment_epoch} "
            state += ", ".join(
                f"{m.member_id}@{m.member_epoch}/{m.state.name}:"
                f"{sorted((names.get(t, '?'), p) for t, ps in m.assigned_partitions.items() for p in ps)}"
                f"-{sorted((names.get(t, '?'), p) for t, ps in m.partitions_pending_revocation.items() for p in ps)}"
                for _, m in sorted(group.members.items()))
        members = "; ".join(
            f"{n}:{m.member_id}@{m.epoch}{'/paused' if m.paused else ''}{'/stalled' if m.stalled else ''}"
            f"{'/zombie' if m.zombie else ''} "
            f"owns={sorted(m.owned)}" for n, m in sorted(self.members.items())
            if m.alive and isinstance(m, SimConsumer))
        return f"t={self.now_ms()} group[{state}] members[{members}] counts={self.counts}"
