"""A simulated consumer: the real member protocol (:class:`~groupcoord.member.protocol_machine.MemberMachine`, the
same machine ``GroupMember`` drives) fed from the simulated network and clock.

The machine joins (KIP-394), syncs, heartbeats, revokes (eager: everything before each JoinGroup; cooperative: only
what the new assignment takes away, then it rejoins), fences commits by generation and reacts to errors as Kafka's
``ConsumerCoordinator`` does. This shell adds what a consumer application does around it: the leader assigns with
the project's sticky or cooperative-sticky algorithm (:mod:`groupcoord.sim.leader`) and rejoins when the metadata it
assigned with changed, it fetches the committed offsets of new partitions, consumes (its position moves one offset
per heartbeat) and commits its positions (auto commit, before revocations, on close). It polls all the time, except
after losing the coordinator: then it retries after a backoff. It drops partitions after a session without an
answer (librdkafka's rule).

A paused member reads nothing: responses wait in its inbox until it resumes. A static member (KIP-345) sends its
``group.instance.id`` everywhere, does not send LeaveGroup when it closes (its session runs out instead, as in
Kafka), and dies when fenced (FENCED_INSTANCE_ID: another process took its instance id).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from kafka.structs import OffsetAndMetadata
from kafka.structs import TopicPartition as KafkaTopicPartition

from groupcoord.member.generation import Generation
from groupcoord.member.heartbeat import HeartbeatTiming
from groupcoord.member.protocol_machine import (
    AssignAsLeader,
    CommitBeforeRevoke,
    CoordinatorLost,
    MachineConfig,
    MemberFailed,
    MemberMachine,
    Output,
    PartitionsAssigned,
    Phase,
    Send,
    first_commit_error,
)
from groupcoord.member.subscription import grouped
from groupcoord.protocol import Errors
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.requests import (
    GroupRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitTopic,
    OffsetFetchRequest,
    OffsetFetchTopic,
    SyncGroupRequest,
)
from groupcoord.protocol.responses import (
    GroupResponse,
    JoinGroupResponse,
    OffsetCommitResponse,
    OffsetFetchResponse,
)
from groupcoord.sim.leader import assignments, read_group, subscribed_topics

log = logging.getLogger("groupcoord.sim.member")

__all__ = ["PROBE_OFFSET", "PROTOCOL_NAMES", "MemberTimings", "Phase", "SimMember", "Transport"]

PROTOCOL_NAMES = {False: "sim-eager", True: "sim-cooperative"}
PROBE_OFFSET = 10**12
"""The offset a probe commit carries: far above any real position, so that an accepted probe stands out."""


@dataclass(frozen=True, kw_only=True)
class MemberTimings:
    """The client settings every simulated member uses."""

    session_ms: int = 10_000
    rebalance_ms: int = 30_000
    heartbeat_ms: int = 3000
    commit_interval_ms: int = 5000
    retry_backoff_ms: int = 100


class Transport(Protocol):
    """What a member needs from the simulated world."""

    def now_ms(self) -> int:
        """Simulated time."""
        ...

    def send(self, member: SimMember, request: GroupRequest) -> int:
        """Hand ``request`` to the coordinator; the response arrives later through :meth:`SimMember.deliver`."""
        ...

    def partition_counts(self) -> Mapping[str, int]:
        """The topic metadata a client would fetch."""
        ...


_EXPECTED: dict[str, frozenset[ErrorCode]] = {
    "join": frozenset({Errors.NONE, Errors.MEMBER_ID_REQUIRED, Errors.UNKNOWN_MEMBER_ID, Errors.NOT_COORDINATOR}),
    "sync": frozenset({Errors.NONE, Errors.REBALANCE_IN_PROGRESS, Errors.UNKNOWN_MEMBER_ID,
                       Errors.ILLEGAL_GENERATION, Errors.NOT_COORDINATOR}),
    "heartbeat": frozenset({Errors.NONE, Errors.REBALANCE_IN_PROGRESS, Errors.UNKNOWN_MEMBER_ID,
                            Errors.ILLEGAL_GENERATION, Errors.NOT_COORDINATOR}),
    "commit": frozenset({Errors.NONE, Errors.REBALANCE_IN_PROGRESS, Errors.UNKNOWN_MEMBER_ID,
                         Errors.ILLEGAL_GENERATION, Errors.NOT_COORDINATOR}),
    "fetch": frozenset({Errors.NONE, Errors.NOT_COORDINATOR}),
    "leave": frozenset({Errors.NONE, Errors.UNKNOWN_MEMBER_ID, Errors.NOT_COORDINATOR}),
}
"""Errors a correct coordinator may answer a well-behaved member with; anything else is a finding."""


_KINDS: Mapping[type, str] = {JoinGroupRequest: "join", SyncGroupRequest: "sync", HeartbeatRequest: "heartbeat",
                              OffsetCommitRequest: "commit", OffsetFetchRequest: "fetch", LeaveGroupRequest: "leave"}
"""The kind of each request a member sends, as :data:`_EXPECTED` names it."""


class SimMember:
    """One simulated consumer process in group ``group_id``."""

    def __init__(self, name: str, group_id: str, topics: tuple[str, ...], *, cooperative: bool,
                 timings: MemberTimings, transport: Transport, instance_id: str | None = None) -> None:
        self.name = name
        self.instance_id = instance_id
        self.group_id = group_id
        self.cooperative = cooperative
        self.timings = timings
        self._net = transport
        self.machine = MemberMachine(MachineConfig(
            group_id=group_id, timing=HeartbeatTiming(
                session_timeout_ms=timings.session_ms, heartbeat_interval_ms=timings.heartbeat_ms,
                rebalance_timeout_ms=timings.rebalance_ms, retry_backoff_ms=timings.retry_backoff_ms),
            protocols=(PROTOCOL_NAMES[cooperative],), topics=topics, cooperative=cooperative,
            group_instance_id=instance_id, client_id=name,
            leave_on_close=instance_id is None,  # a static member lets its session run out, as in Kafka
            auto_commit_interval_ms=timings.commit_interval_ms, lose_after_session_timeout=True),
            clock=transport.now_ms)
        self.positions: dict[KafkaTopicPartition, int] = {}
        self.paused = False
        self.left = False
        self.inbox: list[tuple[int, GroupResponse, int]] = []
        self.pending: dict[int, str] = {}  # transport token -> kind
        self._request_ids: dict[int, int] = {}  # transport token -> the machine's request id
        self._fetched_in: Generation | None = None  # the generation the last OffsetFetch was sent in
        self.unexpected: list[str] = []
        self.assigned_with: dict[str, int] | None = None  # the leader's metadata snapshot (Kafka's assignmentSnapshot)
        self.retry_at_ms = transport.now_ms()  # after losing the coordinator, it rejoins no earlier than this
        self.zombie = False  # a replaced process (events.Restart); fenced, a static zombie stops for good

    # --- the machine's state, as the invariants read it --------------------------------------------------------
    @property
    def alive(self) -> bool:
        """False once closed or killed."""
        return not self.left

    @property
    def phase(self) -> Phase:
        """Where the member is in the protocol (closed once it left or was killed)."""
        return Phase.CLOSED if self.left else self.machine.phase

    @property
    def member_id(self) -> str:
        """The member id the coordinator gave ("" before the first join or after a reset)."""
        return self.machine.generation.member_id

    @property
    def generation(self) -> int:
        """The generation id (-1 when none)."""
        return self.machine.generation.generation_id

    @property
    def owned(self) -> frozenset[KafkaTopicPartition]:
        """The partitions this member consumes."""
        return frozenset() if self.left else self.machine.owned

    @property
    def topics(self) -> tuple[str, ...]:
        """The subscription."""
        return self.machine.topics

    @property
    def rejoin_pending(self) -> bool:
        """True when the member will rejoin at its next poll (a new subscription, a refused assignment, an error),
        even while it backs off from a lost coordinator."""
        return not self.left and self.machine.rejoin_reason is not None

    @property
    def is_leader(self) -> bool:
        """True when the last JoinGroup made this member the leader."""
        return self.machine.is_leader

    # --- lifecycle ---------------------------------------------------------------------------------------------
    def start(self) -> None:
        """Join the group."""
        self._poll()

    def pause(self) -> None:
        """Stop running (GC pause)."""
        self.paused = True

    def resume(self) -> None:
        """Run again: read every response that arrived meanwhile (when it arrived), then poll."""
        self.paused = False
        inbox, self.inbox = self.inbox, []
        for token, response, arrived_at in inbox:
            self._handle(token, response, arrived_at)
        self._poll()

    def close(self) -> None:
        """Commit, revoke and leave the group (a clean shutdown)."""
        if self.paused:
            self.kill()
            return
        while outputs := self.machine.leave("the member is closing"):
            self._run(outputs)
        self.kill()

    def kill(self) -> None:
        """Die without a word (the coordinator finds out from the session timeout)."""
        self.left = True
        self.positions, self.inbox, self.pending, self._request_ids = {}, [], {}, {}

    def subscribe(self, topics: tuple[str, ...]) -> None:
        """Change the subscription; a new subscription needs a rebalance."""
        if self.paused or not self.alive:
            return
        self.machine.subscribe(topics)
        self._poll()

    # --- time --------------------------------------------------------------------------------------------------
    def next_due(self) -> int | None:
        """When this member next wants to act on its own, or ``None``."""
        if self.paused or not self.alive:
            return None
        machine = self.machine
        if machine.phase is Phase.UNJOINED or (machine.phase is Phase.STABLE and not machine.stable):
            return self.retry_at_ms
        if machine.phase is not Phase.STABLE:
            return None
        wake = [machine.next_auto_commit_ms]
        heartbeat = machine.time_to_next_heartbeat_ms()
        if heartbeat is not None:
            wake.append(self._net.now_ms() + heartbeat)
        return math.ceil(min(wake))

    def on_time(self, now: int) -> None:
        """Do whatever is due at ``now``: retry a join, or consume, heartbeat and auto-commit."""
        if self.paused or not self.alive:
            return
        machine = self.machine
        if machine.phase is Phase.STABLE and machine.is_leader and self._metadata_changed():
            machine.request_rejoin("the metadata the leader assigned with changed")  # as Kafka's leader does
        self._poll()
        if not self.alive or machine.phase is not Phase.STABLE:
            return
        heartbeat = machine.on_time()
        if any(isinstance(o, Send) and isinstance(o.request, HeartbeatRequest) for o in heartbeat):
            self._consume()
        self._run(heartbeat)
        if self.alive and machine.phase is Phase.STABLE:
            self._commit(machine.auto_commit_due())

    def commit_now(self) -> None:
        """An explicit commit of every position (``commitSync``)."""
        if self.alive and not self.paused and self.machine.phase is Phase.STABLE:
            self._commit(dict(self.machine.processed))

    def probe(self, generation: int) -> None:
        """A zombie-style commit with an arbitrary ``generation`` (the checker expects a rejection)."""
        if not self.alive or self.paused:
            return
        tp = min(self.owned) if self.owned else (self.topics[0] if self.topics else "t0", 0)
        self._send("probe", OffsetCommitRequest(
            group_id=self.group_id, generation_id=generation, member_id=self.member_id or f"{self.name}-zombie",
            group_instance_id=self.instance_id,
            topics=(OffsetCommitTopic(tp[0], (OffsetCommitPartition(tp[1], PROBE_OFFSET),)),)))

    # --- responses ---------------------------------------------------------------------------------------------
    def deliver(self, token: int, response: GroupResponse) -> None:
        """A response for one of this member's requests (queued while paused)."""
        if not self.alive:
            return
        if self.paused:
            self.inbox.append((token, response, self._net.now_ms()))
            return
        self._handle(token, response, self._net.now_ms())
        self._poll()

    def _handle(self, token: int, response: GroupResponse, arrived_at: int) -> None:
        kind = self.pending.pop(token, None)
        request_id = self._request_ids.pop(token, None)
        if kind is None or request_id is None or kind == "probe" or not self.alive:
            return
        error = _top_error(response)
        if error == Errors.FENCED_INSTANCE_ID and self.instance_id is not None:
            self.kill()  # Kafka's FencedInstanceIdException: this process is a zombie and must stop
            return
        if error not in _EXPECTED[kind]:
            self.unexpected.append(f"{self.name}: {kind} answered {error.name}")
        if (self.zombie and self.instance_id is not None and kind in ("join", "sync", "heartbeat", "commit")
                and error in (Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION)):
            self.kill()  # rejoining afresh, a static zombie would be a twin of its replacement (same instance id)
            return
        if isinstance(response, OffsetFetchResponse):
            self._on_fetch(response)
            return
        if isinstance(response, JoinGroupResponse) and error == Errors.NONE and response.leader == response.member_id:
            # Even with skip_assignment (a static leader rejoined, KIP-814) the leader watches the metadata.
            counts = self._net.partition_counts()
            topics = subscribed_topics(read_group(response.members, counts))
            self.assigned_with = {t: counts.get(t, 0) for t in sorted(topics)}
        self._run(self.machine.on_response(request_id, response, received_at_ms=arrived_at))

    def _on_fetch(self, response: OffsetFetchResponse) -> None:
        if self._fetched_in != self.machine.generation:
            # Kafka's consumer does not use committed offsets fetched in another generation (its pending
            # OffsetFetch is tied to one): a partition that left and came back may have been committed further
            # by its owner in between, and the old answer would rewind it.
            self._fetch_missing_positions()
            return
        for topic in response.topics:
            for partition in topic.partitions:
                tp = KafkaTopicPartition(topic.name, partition.partition)
                if tp in self.owned and tp not in self.positions and not partition.error.is_error:
                    self.positions[tp] = max(partition.offset, 0)
        self._mark_positions()

    # --- the machine's outputs ---------------------------------------------------------------------------------
    def _poll(self) -> None:
        """The consumer's poll loop: (re)join whenever the machine asks, unless backing off from a lost coordinator
        (lost partitions are dropped even then)."""
        while self.alive and not self.paused:
            if self._net.now_ms() < self.retry_at_ms:
                self._run(self.machine.lost_partitions())
                return
            outputs = self.machine.poll()
            if not outputs:
                return
            self._run(outputs)

    def _run(self, outputs: Iterable[Output]) -> None:
        for output in outputs:
            if not self.alive:
                return
            if isinstance(output, Send):
                self._send(_KINDS[type(output.request)], output.request, output.request_id)
            elif isinstance(output, AssignAsLeader):
                self._run(self.machine.assigned(assignments(output.members, self._net.partition_counts(),
                                                            cooperative=self.cooperative)))
            elif isinstance(output, CommitBeforeRevoke):
                self._commit(output.offsets)
            elif isinstance(output, PartitionsAssigned):
                self._fetch_missing_positions()
            elif isinstance(output, CoordinatorLost):
                self.retry_at_ms = self._net.now_ms() + self.timings.retry_backoff_ms
            elif isinstance(output, MemberFailed):
                self.kill()
        self.positions = {tp: p for tp, p in self.positions.items() if tp in self.owned}

    def _consume(self) -> None:
        """Each heartbeat interval, a member reads one record of every partition it has a position in."""
        for tp in self.owned:
            if tp in self.positions:
                self.positions[tp] += 1
        self._mark_positions()
        self._fetch_missing_positions()

    def _mark_positions(self) -> None:
        self.machine.mark_processed({tp: OffsetAndMetadata(p, "", -1) for tp, p in self.positions.items()})

    def _commit(self, offsets: Mapping[KafkaTopicPartition, OffsetAndMetadata]) -> None:
        """Commit ``offsets`` in this member's generation (not outside one: that would be a simple commit)."""
        if offsets and self.machine.commit_generation().is_valid:
            self._run([self.machine.commit(offsets)])

    def _fetch_missing_positions(self) -> None:
        missing = {tp for tp in self.owned if tp not in self.positions}
        if not missing or "fetch" in self.pending.values():
            return
        self._fetched_in = self.machine.generation
        self._send("fetch", OffsetFetchRequest(group_id=self.group_id, topics=tuple(
            OffsetFetchTopic(tp.topic, tp.partitions) for tp in grouped(missing))))

    def _metadata_changed(self) -> bool:
        if self.assigned_with is None:
            return False
        counts = self._net.partition_counts()
        return any(counts.get(t, 0) != n for t, n in self.assigned_with.items())

    def _send(self, kind: str, request: GroupRequest, request_id: int = 0) -> None:
        token = self._net.send(self, request)
        self.pending[token] = kind
        self._request_ids[token] = request_id


def _top_error(response: GroupResponse) -> ErrorCode:
    """The error of a response as a whole (for a commit, the first partition error)."""
    if isinstance(response, OffsetCommitResponse):
        return first_commit_error(response)
    error: ErrorCode = getattr(response, "error", Errors.NONE)
    return error
