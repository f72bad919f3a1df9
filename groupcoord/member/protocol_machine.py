"""The consumer-group member protocol as a pure state machine: no sockets, no threads, an injected clock.

:class:`MemberMachine` decides everything a classic-protocol member decides: when to (re)join, what its JoinGroup
and SyncGroup carry, what a response or an error means, which partitions are revoked, lost or assigned, which
generation a commit is fenced by, and when a heartbeat is due (through :class:`HeartbeatTimer`). A *shell* owns the
I/O: it sends the requests the machine returns, feeds their responses back, and runs the application's callbacks.
The threaded :class:`~groupcoord.member.member.GroupMember` and the simulator's member are two such shells.

Events in (each returns a list of :data:`Output`, to be handled in order):

- :meth:`MemberMachine.poll` - the application polls: lost partitions are reported, a due (re)join is prepared
  (revocations first) and its JoinGroup returned;
- :meth:`MemberMachine.on_time` - time passed: a heartbeat when due, or leaving after a poll timeout;
- :meth:`MemberMachine.on_response` / :meth:`MemberMachine.on_request_failed` - a response arrived, or the request
  was lost with its connection;
- :meth:`MemberMachine.assigned` - the shell ran the leader's assignor after an :class:`AssignAsLeader`;
- :meth:`MemberMachine.commit`, :meth:`MemberMachine.subscribe`, :meth:`MemberMachine.request_rejoin`,
  :meth:`MemberMachine.leave` - the application commits, changes its subscription, asks for a rejoin, closes.

Outputs: :class:`Send` (a request on :mod:`groupcoord.protocol` types, with the id to answer it by),
:class:`AssignAsLeader`, :class:`CommitBeforeRevoke`, :class:`PartitionsRevoked`, :class:`PartitionsAssigned`,
:class:`PartitionsLost`, :class:`CommitCompleted`, :class:`CoordinatorLost` and :class:`MemberFailed`.

A method that returns a revocation stops there: it runs again (the next ``poll`` or ``leave``) to send what follows
(the JoinGroup, the LeaveGroup), so that the application's ``on_partitions_revoked`` may still commit in the
generation it is leaving.

Errors, as Kafka's ``AbstractCoordinator``/``ConsumerCoordinator`` handle them:

- NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS or a lost request: :class:`CoordinatorLost`
  (rediscover with backoff); the partitions are kept, an interrupted join round is retried;
- MEMBER_ID_REQUIRED (KIP-394): join again at once with the member id the coordinator gave;
- UNKNOWN_MEMBER_ID: the member id and generation are reset, the partitions are lost, rejoin;
- ILLEGAL_GENERATION: the generation is lost (the member id is kept), the partitions are lost, rejoin;
- REBALANCE_IN_PROGRESS: rejoin (a cooperative member keeps its partitions);
- FENCED_INSTANCE_ID (a static member's id was taken over) and any other error: fatal, :class:`MemberFailed`.

An error only resets what it speaks of: an answer to a request sent in an older generation is not acted on.

Worked example: one member, server-side assignment, a clock that moves only when told (run as a doctest by
tests/member/test_protocol_machine.py)::

    >>> from groupcoord.protocol import Errors, JoinGroupResponse, SyncGroupResponse, HeartbeatResponse
    >>> from groupcoord.protocol.consumer_protocol import Assignment, TopicPartitions, encode_assignment
    >>> now = [0.0]
    >>> machine = MemberMachine(MachineConfig(
    ...     group_id="g", topics=("t",), protocols=("server-range",),
    ...     timing=HeartbeatTiming(session_timeout_ms=10_000, heartbeat_interval_ms=3000,
    ...                            rebalance_timeout_ms=30_000)), clock=lambda: now[0])
    >>> (join,) = machine.poll()
    >>> join.request.member_id, join.request.protocols[0].name
    ('', 'server-range')
    >>> machine.on_response(join.request_id, JoinGroupResponse(error=Errors.MEMBER_ID_REQUIRED, member_id="m-1"))
    []
    >>> (join,) = machine.poll()  # KIP-394: again, with the id the coordinator gave
    >>> join.request.member_id
    'm-1'
    >>> (sync,) = machine.on_response(join.request_id, JoinGroupResponse(
    ...     error=Errors.NONE, generation_id=1, member_id="m-1", leader="m-1", protocol_name="server-range"))
    >>> sync.request.assignments  # server-side: the coordinator assigns, the leader sends nothing
    ()
    >>> data = encode_assignment(Assignment(partitions=(TopicPartitions("t", (0, 1)),)))
    >>> (assigned,) = machine.on_response(sync.request_id, SyncGroupResponse(error=Errors.NONE, assignment=data))
    >>> sorted(assigned.added), machine.phase
    ([TopicPartition(topic='t', partition=0), TopicPartition(topic='t', partition=1)], <Phase.STABLE: 'stable'>)
    >>> machine.on_time()  # no heartbeat due yet
    []
    >>> now[0] += 3000
    >>> (heartbeat,) = machine.on_time()
    >>> heartbeat.request.generation_id, heartbeat.request.member_id
    (1, 'm-1')
    >>> machine.on_response(heartbeat.request_id, HeartbeatResponse(error=Errors.REBALANCE_IN_PROGRESS))
    []
    >>> (revoked,) = machine.poll()  # eager: revoke before rejoining; the JoinGroup follows on the next poll
    >>> type(revoked).__name__, sorted(revoked.partitions)
    ('PartitionsRevoked', [TopicPartition(topic='t', partition=0), TopicPartition(topic='t', partition=1)])
    >>> type(machine.poll()[0].request).__name__
    'JoinGroupRequest'
"""

from __future__ import annotations

import enum
import itertools
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from kafka.structs import OffsetAndMetadata, TopicPartition

from groupcoord.group.group import is_server_side
from groupcoord.member.generation import NO_GENERATION, UNKNOWN_MEMBER_ID, Generation
from groupcoord.member.heartbeat import HeartbeatTimer, HeartbeatTiming
from groupcoord.member.subscription import assigned_partitions, subscription_metadata
from groupcoord.protocol.errors import ErrorCode, Errors
from groupcoord.protocol.requests import (
    GroupRequest,
    HeartbeatRequest,
    JoinGroupProtocol,
    JoinGroupRequest,
    LeaveGroupRequest,
    MemberIdentity,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitTopic,
    SyncGroupAssignment,
    SyncGroupRequest,
)
from groupcoord.protocol.responses import (
    GroupResponse,
    HeartbeatResponse,
    JoinGroupMember,
    JoinGroupResponse,
    OffsetCommitResponse,
    SyncGroupResponse,
)

log = logging.getLogger("groupcoord.member.protocol")

COORDINATOR_ERRORS = frozenset({Errors.NOT_COORDINATOR, Errors.COORDINATOR_NOT_AVAILABLE,
                                Errors.COORDINATOR_LOAD_IN_PROGRESS})
"""Errors that mean "this is not (yet) your coordinator": rediscover it and retry."""

PROTOCOL_TYPE = "consumer"

Partitions = frozenset[TopicPartition]


class Phase(enum.Enum):
    """Where the member is in the group protocol."""

    UNJOINED = "unjoined"  # not in a generation, or it must rejoin before acting again
    JOINING = "joining"  # a JoinGroup is in flight
    ASSIGNING = "assigning"  # the leader's shell runs the assignor (after AssignAsLeader)
    SYNCING = "syncing"  # a SyncGroup is in flight
    STABLE = "stable"
    FAILED = "failed"  # fatal: nothing more is sent
    CLOSED = "closed"  # left the group


class CommitOutcome(enum.Enum):
    """How a commit ended, as the application sees it."""

    COMMITTED = "committed"
    RETRIABLE = "retriable"  # the coordinator moved or is loading: rediscover and commit again
    REBALANCED = "rebalanced"  # the generation is over (Kafka's CommitFailedException): poll, then commit again
    FAILED = "failed"  # fatal for the member (see MemberFailed)


@dataclass(frozen=True)
class Send:
    """Send ``request`` to the coordinator; feed its answer back with ``request_id``."""

    request_id: int
    request: GroupRequest


@dataclass(frozen=True)
class AssignAsLeader:
    """This member leads a client-side protocol: compute every member's assignment, then call ``assigned``."""

    protocol: str
    members: tuple[JoinGroupMember, ...]


@dataclass(frozen=True)
class CommitBeforeRevoke:
    """Auto commit: commit these processed offsets now, before the revocation that follows."""

    offsets: Mapping[TopicPartition, OffsetAndMetadata]


@dataclass(frozen=True)
class PartitionsRevoked:
    """These partitions are given up cleanly (the application may commit them first)."""

    partitions: Partitions


@dataclass(frozen=True)
class PartitionsAssigned:
    """A SyncGroup completed: ``added`` are newly owned, ``assignment`` is everything owned now."""

    added: Partitions
    assignment: Partitions
    generation: Generation


@dataclass(frozen=True)
class PartitionsLost:
    """The generation ended without a clean hand-over: these may be owned by someone else already."""

    partitions: Partitions


@dataclass(frozen=True)
class CommitCompleted:
    """The answer to an OffsetCommit of ``offsets``."""

    request_id: int
    offsets: Mapping[TopicPartition, OffsetAndMetadata]
    outcome: CommitOutcome
    error: ErrorCode


@dataclass(frozen=True)
class CoordinatorLost:
    """Drop the connection to the coordinator and rediscover it (with backoff)."""

    reason: str


@dataclass(frozen=True)
class MemberFailed:
    """Fatal: ``error`` answered ``what``; the member must stop (FENCED_INSTANCE_ID or an unexpected error)."""

    error: ErrorCode
    what: str


Output = (Send | AssignAsLeader | CommitBeforeRevoke | PartitionsRevoked | PartitionsAssigned | PartitionsLost
          | CommitCompleted | CoordinatorLost | MemberFailed)
"""Anything the machine asks its shell to do or to tell the application."""


@dataclass(frozen=True, kw_only=True)
class MachineConfig:
    """What the machine needs to know about the member.

    ``protocols`` are the assignor names offered in JoinGroup, in preference order; ``cooperative`` selects KIP-429.
    ``leave_on_close`` sends LeaveGroup on :meth:`MemberMachine.leave` (a static member may rather let its session
    expire). ``auto_commit_interval_ms`` is ``None`` without auto commit. ``lose_after_session_timeout`` is
    librdkafka's rule: a member that has not heard from the coordinator for a session timeout (outside a join round,
    during which the coordinator does not expire it) may have been removed, so its partitions are lost and it
    rejoins; Kafka's Java client (and ``GroupMember``) keep them until the coordinator says otherwise.
    """

    group_id: str
    timing: HeartbeatTiming
    protocols: tuple[str, ...]
    topics: tuple[str, ...] = ()
    cooperative: bool = False
    group_instance_id: str | None = None
    client_id: str = ""
    leave_on_close: bool = True
    auto_commit_interval_ms: int | None = None
    lose_after_session_timeout: bool = False


class _Kind(enum.Enum):
    JOIN = "JoinGroup"
    SYNC = "SyncGroup"
    HEARTBEAT = "Heartbeat"
    COMMIT = "OffsetCommit"
    LEAVE = "LeaveGroup"


_HEARD = frozenset({_Kind.JOIN, _Kind.SYNC, _Kind.HEARTBEAT})
"""Answers that confirm the coordinator still counts this member in (for ``lose_after_session_timeout``)."""


@dataclass(frozen=True)
class _InFlight:
    kind: _Kind
    generation: Generation
    offsets: Mapping[TopicPartition, OffsetAndMetadata] = field(default_factory=dict)


def commit_topics(offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> tuple[OffsetCommitTopic, ...]:
    """``offsets`` as OffsetCommit topics, sorted."""
    by_topic: dict[str, list[OffsetCommitPartition]] = {}
    for tp, committed in sorted(offsets.items()):
        epoch = committed.leader_epoch if committed.leader_epoch is not None else -1
        by_topic.setdefault(tp.topic, []).append(
            OffsetCommitPartition(tp.partition, committed.offset, epoch, committed.metadata or ""))
    return tuple(OffsetCommitTopic(topic, tuple(parts)) for topic, parts in by_topic.items())


def first_commit_error(response: OffsetCommitResponse) -> ErrorCode:
    """The first partition error of an OffsetCommit response (NONE when every partition was committed)."""
    return next((p.error for t in response.topics for p in t.partitions if p.error.is_error), Errors.NONE)


class MemberMachine:
    """One member's protocol state (see the module docstring). Not thread-safe: a shell serialises its calls.

    A shell may read: ``generation``, ``phase``, ``owned`` (the partitions it consumes), ``topics`` (the
    subscription), ``processed`` (offsets to commit), ``rejoin_reason`` (``None`` unless a rejoin is due),
    ``failure``, ``is_leader``, ``next_auto_commit_ms`` and ``timer``; it changes them only through the methods.
    """

    def __init__(self, config: MachineConfig, *, clock: Callable[[], float]) -> None:
        self.config = config
        self._clock = clock
        self.timer = HeartbeatTimer(config.timing, clock=clock)
        self.generation = NO_GENERATION
        self.phase = Phase.UNJOINED
        self.owned: Partitions = frozenset()
        self.topics: tuple[str, ...] = tuple(sorted(set(config.topics)))
        self.processed: dict[TopicPartition, OffsetAndMetadata] = {}
        self.rejoin_reason: str | None = "first join"
        self.failure: MemberFailed | None = None
        self.is_leader = False
        self._pending_lost = False
        self._ids = itertools.count(1)
        self._in_flight: dict[int, _InFlight] = {}
        self.next_auto_commit_ms = clock() + (config.auto_commit_interval_ms or 0)
        self._last_heard_ms = clock()

    # --- what a shell may read ---------------------------------------------------------------------------------
    @property
    def stable(self) -> bool:
        """True when the member is in a generation with its assignment and no rejoin is pending."""
        return self.phase is Phase.STABLE and self.rejoin_reason is None

    def commit_generation(self) -> Generation:
        """The generation a commit is fenced by: the current one while stable, else none."""
        return self.generation if self.phase is Phase.STABLE else NO_GENERATION

    def time_to_next_heartbeat_ms(self) -> float | None:
        """Milliseconds until :meth:`on_time` has a heartbeat to send; ``None`` while not stable."""
        if self.phase is not Phase.STABLE or self._heartbeat_in_flight():
            return None
        return self.timer.time_to_next_heartbeat_ms()

    # --- events from the application ---------------------------------------------------------------------------
    def poll(self) -> list[Output]:
        """The application polls: report lost partitions, then prepare and send a due (re)join."""
        self.timer.poll()
        if self.phase is Phase.ASSIGNING:  # the shell gave up on the assignment (its assignor failed): join again
            self.phase = Phase.UNJOINED
            self.request_rejoin("the leader's assignment failed")
        outputs = self.lost_partitions()
        if self.rejoin_reason is None or self.phase not in (Phase.UNJOINED, Phase.STABLE):
            return outputs
        revoked = self.owned if not self.config.cooperative else frozenset(
            tp for tp in self.owned if tp.topic not in self.topics)
        if revoked:  # the JoinGroup follows on the next poll, after the application has seen the revocation
            return [*outputs, *self._revoke(revoked)]
        return [*outputs, self._join()]

    def lost_partitions(self) -> list[Output]:
        """Report the partitions lost since the last call (the first step of :meth:`poll`, which a shell that may
        not rejoin yet calls alone)."""
        if self.phase in (Phase.FAILED, Phase.CLOSED):
            return []
        self._lose_if_session_ran_out()
        if self._pending_lost and self.owned:
            return [self._lose()]
        return []

    def request_rejoin(self, reason: str) -> None:
        """Rejoin at the next :meth:`poll` (a join round in flight completes first)."""
        if self.rejoin_reason is None:
            self.rejoin_reason = reason

    def subscribe(self, topics: Sequence[str]) -> None:
        """Change the subscription; a different one needs a rejoin."""
        wanted = tuple(sorted(set(topics)))
        if wanted != self.topics:
            self.topics = wanted
            self.request_rejoin("subscribed topics changed")

    def mark_processed(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        """Record the next offsets to commit (auto commit, before revocations, and ``commit()`` by default)."""
        self.processed.update(offsets)

    def auto_commit_due(self) -> dict[TopicPartition, OffsetAndMetadata]:
        """With auto commit, the processed offsets once an interval has passed (then the interval restarts)."""
        interval = self.config.auto_commit_interval_ms
        if interval is None or self._clock() < self.next_auto_commit_ms:
            return {}
        self.next_auto_commit_ms = self._clock() + interval
        return dict(self.processed)

    def commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> Send:
        """An OffsetCommit of ``offsets``, fenced by the generation (none unless stable, so the coordinator
        refuses it while a rebalance is under way)."""
        generation = self.commit_generation()
        return self._send(_InFlight(_Kind.COMMIT, generation, dict(offsets)), OffsetCommitRequest(
            group_id=self.config.group_id, generation_id=generation.generation_id,
            member_id=generation.member_id or UNKNOWN_MEMBER_ID,
            group_instance_id=self.config.group_instance_id if generation.is_valid else None,
            topics=commit_topics(offsets)))

    def leave(self, reason: str) -> list[Output]:
        """Close: revoke what a stable member owns (first call), then LeaveGroup (next call); then nothing."""
        if self.phase in (Phase.FAILED, Phase.CLOSED):
            return []
        if self.owned and self.phase is Phase.STABLE:
            return self._revoke(self.owned)
        generation, self.phase = self.generation, Phase.CLOSED
        self._in_flight.clear()
        if not generation.member_id or not self.config.leave_on_close:
            return []
        return [self._leave_request(generation, reason)]

    # --- events from time --------------------------------------------------------------------------------------
    def on_time(self) -> list[Output]:
        """Time passed: a stable member heartbeats when due, and leaves when the application stopped polling."""
        if self.phase is not Phase.STABLE or self._heartbeat_in_flight():
            return []
        self._lose_if_session_ran_out()
        if self.timer.poll_timeout_expired():
            return self._poll_timed_out()
        if not self.timer.should_heartbeat():
            return []
        self.timer.sent_heartbeat()
        generation = self.generation
        return [self._send(_InFlight(_Kind.HEARTBEAT, generation), HeartbeatRequest(
            group_id=self.config.group_id, generation_id=generation.generation_id, member_id=generation.member_id,
            group_instance_id=self.config.group_instance_id))]

    def _poll_timed_out(self) -> list[Output]:
        """Kafka's max.poll.interval.ms: a dynamic member leaves (its partitions are lost), a static one rejoins."""
        reason = "poll() was not called within the rebalance timeout"
        log.warning("group %s: %s; leaving the group", self.config.group_id, reason)
        if self.config.group_instance_id is not None:
            self.phase = Phase.UNJOINED
            self.request_rejoin(reason)
            return []
        leave = self._leave_request(self.generation, reason)
        self._reset_generation(reason, keep_member_id=False)
        return [leave]

    # --- events from the network -------------------------------------------------------------------------------
    def on_request_failed(self, request_id: int) -> list[Output]:
        """The request got no answer (its connection was lost): as NOT_COORDINATOR."""
        sent = self._in_flight.pop(request_id, None)
        if sent is None:
            return []
        return self._coordinator_lost(sent, "the connection was lost")

    def on_response(self, request_id: int, response: GroupResponse, *,
                    received_at_ms: float | None = None) -> list[Output]:
        """A response to request ``request_id`` arrived (at ``received_at_ms``, default now; a shell that reads it
        later says when it arrived). An unknown or forgotten id is ignored."""
        sent = self._in_flight.pop(request_id, None)
        if sent is None or self.phase in (Phase.FAILED, Phase.CLOSED):
            return []
        if isinstance(response, OffsetCommitResponse):
            return self._on_commit(request_id, sent, first_commit_error(response))
        error = getattr(response, "error", Errors.NONE)
        if sent.kind in _HEARD and error in (Errors.NONE, Errors.REBALANCE_IN_PROGRESS):
            at = self._clock() if received_at_ms is None else received_at_ms
            self._last_heard_ms = max(self._last_heard_ms, at)
        if sent.kind is _Kind.LEAVE:
            log.info("group %s: left as %s (%s)", self.config.group_id, sent.generation.member_id, error.name)
            return []
        if isinstance(response, JoinGroupResponse) and error is Errors.MEMBER_ID_REQUIRED:  # KIP-394
            log.info("group %s: the coordinator gave member id %s", self.config.group_id, response.member_id)
            self.generation = Generation(self.generation.generation_id, response.member_id, self.generation.protocol)
            self.phase = Phase.UNJOINED
            self.request_rejoin("member id required")
            return []
        if error is not Errors.NONE:
            return self._on_error(sent, error)
        if isinstance(response, JoinGroupResponse):
            return self._on_joined(response)
        if isinstance(response, SyncGroupResponse):
            return self._on_synced(response)
        if isinstance(response, HeartbeatResponse):
            self.timer.received_heartbeat()
        return []

    def assigned(self, assignments: Mapping[str, bytes]) -> list[Output]:
        """The leader's assignor ran (after :class:`AssignAsLeader`): send SyncGroup with everyone's assignment."""
        if self.phase is not Phase.ASSIGNING:
            return []
        return [self._sync(tuple(SyncGroupAssignment(m, a) for m, a in sorted(assignments.items())))]

    # --- the join round ----------------------------------------------------------------------------------------
    def _join(self) -> Send:
        reason, self.rejoin_reason = self.rejoin_reason, None
        self.phase, self.is_leader = Phase.JOINING, False
        generation = self.generation
        metadata = subscription_metadata(self.topics, self.owned if self.config.cooperative else (),
                                         generation.generation_id)
        timing = self.config.timing
        log.info("group %s: joining as %r (%s)", self.config.group_id, generation.member_id, reason)
        return self._send(_InFlight(_Kind.JOIN, generation), JoinGroupRequest(
            group_id=self.config.group_id, session_timeout_ms=timing.session_timeout_ms,
            rebalance_timeout_ms=timing.rebalance_timeout_ms, member_id=generation.member_id,
            group_instance_id=self.config.group_instance_id, protocol_type=PROTOCOL_TYPE,
            protocols=tuple(JoinGroupProtocol(name, metadata) for name in self.config.protocols),
            reason=reason, client_id=self.config.client_id))

    def _on_joined(self, response: JoinGroupResponse) -> list[Output]:
        self.generation = Generation(response.generation_id, response.member_id, response.protocol_name)
        self.is_leader = response.leader == response.member_id
        protocol = response.protocol_name or ""
        if self.is_leader and not response.skip_assignment and not is_server_side(protocol):
            self.phase = Phase.ASSIGNING
            return [AssignAsLeader(protocol, response.members)]
        return [self._sync(())]

    def _sync(self, assignments: tuple[SyncGroupAssignment, ...]) -> Send:
        self.phase = Phase.SYNCING
        generation = self.generation
        return self._send(_InFlight(_Kind.SYNC, generation), SyncGroupRequest(
            group_id=self.config.group_id, generation_id=generation.generation_id, member_id=generation.member_id,
            group_instance_id=self.config.group_instance_id, protocol_type=PROTOCOL_TYPE,
            protocol_name=generation.protocol, assignments=assignments))

    def _on_synced(self, response: SyncGroupResponse) -> list[Output]:
        assigned = assigned_partitions(response.assignment)
        unsubscribed = sorted(tp for tp in assigned if tp.topic not in self.topics)
        if unsubscribed:
            return self._refuse_assignment(unsubscribed)
        revoked = self.owned - assigned  # cooperative only: an eager member owns nothing by now
        outputs = self._revoke(revoked) if revoked else []
        added = assigned - self.owned
        self.owned, self.phase = assigned, Phase.STABLE
        if revoked:  # KIP-429: the partitions given up in this round are handed over by the next one
            self.request_rejoin(f"revoked {len(revoked)} partition(s)")
        self.timer.reset_timeouts()
        log.info("group %s: generation %d, member %s owns %d partition(s)", self.config.group_id,
                 self.generation.generation_id, self.generation.member_id, len(assigned))
        return [*outputs, PartitionsAssigned(added, assigned, self.generation)]

    def _refuse_assignment(self, unsubscribed: Sequence[TopicPartition]) -> list[Output]:
        """Kafka's ``ConsumerCoordinator.onJoinComplete``: an assignment that does not match the subscription (it
        was computed for an older one, such as a static member's that the coordinator handed back unchanged) is not
        taken. The member stays in the generation with what it owned and rejoins with its current subscription."""
        self.phase = Phase.STABLE
        self.timer.reset_timeouts()
        log.info("group %s: generation %d assigns %s outside the subscription %s; rejoining",
                 self.config.group_id, self.generation.generation_id, unsubscribed, list(self.topics))
        self.request_rejoin("received assignment does not match the current subscription")
        return []

    # --- partitions --------------------------------------------------------------------------------------------
    def _revoke(self, revoked: Partitions) -> list[Output]:
        outputs: list[Output] = []
        pending = {tp: o for tp, o in self.processed.items() if tp in revoked}
        if self.config.auto_commit_interval_ms is not None and pending:
            outputs.append(CommitBeforeRevoke(pending))
        self._drop(revoked)
        log.info("group %s: revoking %s", self.config.group_id, sorted(revoked))
        return [*outputs, PartitionsRevoked(revoked)]

    def _lose(self) -> PartitionsLost:
        lost, self._pending_lost = self.owned, False
        self._drop(lost)
        log.warning("group %s: lost %s", self.config.group_id, sorted(lost))
        return PartitionsLost(lost)

    def _lose_if_session_ran_out(self) -> None:
        if (self.config.lose_after_session_timeout and self.owned and not self._pending_lost
                and self.phase in (Phase.STABLE, Phase.UNJOINED)
                and self._clock() - self._last_heard_ms >= self.config.timing.session_timeout_ms):
            self._pending_lost = True
            self.request_rejoin("no answer from the coordinator for a session timeout")

    def _drop(self, partitions: Partitions) -> None:
        self.owned -= partitions
        for tp in partitions:
            self.processed.pop(tp, None)

    # --- errors ------------------------------------------------------------------------------------------------
    def _on_commit(self, request_id: int, sent: _InFlight, error: ErrorCode) -> list[Output]:
        if error is Errors.NONE:
            return [CommitCompleted(request_id, sent.offsets, CommitOutcome.COMMITTED, error)]
        outputs = self._on_error(sent, error)
        if any(isinstance(o, MemberFailed) for o in outputs):
            outcome = CommitOutcome.FAILED
        elif error in COORDINATOR_ERRORS:
            outcome = CommitOutcome.RETRIABLE
        else:
            outcome = CommitOutcome.REBALANCED
        return [*outputs, CommitCompleted(request_id, sent.offsets, outcome, error)]

    def _on_error(self, sent: _InFlight, error: ErrorCode) -> list[Output]:
        """React to ``error`` answering a request sent in ``sent.generation``."""
        what = sent.kind.value
        if error in COORDINATOR_ERRORS:
            return self._coordinator_lost(sent, f"{what}: {error.name}")
        reason = f"{what}: {error.name}"
        if error in (Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION, Errors.REBALANCE_IN_PROGRESS):
            if self.generation != sent.generation:
                pass  # about an older generation: nothing to reset
            elif error is Errors.REBALANCE_IN_PROGRESS:
                self.request_rejoin(reason)
            else:
                self._reset_generation(reason, keep_member_id=error is Errors.ILLEGAL_GENERATION)
            if sent.kind in (_Kind.JOIN, _Kind.SYNC) and self.phase in (Phase.JOINING, Phase.SYNCING):
                self.phase = Phase.UNJOINED  # the round failed: rejoin
                self.request_rejoin(reason)
            return []
        self.phase = Phase.FAILED
        self.failure = MemberFailed(error, f"{what} for group {self.config.group_id}")
        log.error("group %s: %s answered %s", self.config.group_id, what, error.name)
        return [self.failure]

    def _coordinator_lost(self, sent: _InFlight, reason: str) -> list[Output]:
        if sent.kind is _Kind.HEARTBEAT:
            self.timer.fail_heartbeat()
        elif sent.kind in (_Kind.JOIN, _Kind.SYNC) and self.phase in (Phase.JOINING, Phase.SYNCING):
            self.phase = Phase.UNJOINED
            self.request_rejoin(reason)
        return [CoordinatorLost(reason)]

    def _reset_generation(self, reason: str, *, keep_member_id: bool) -> None:
        log.info("group %s: generation %d is lost (%s)", self.config.group_id, self.generation.generation_id, reason)
        self.generation = self.generation.lost() if keep_member_id else NO_GENERATION
        self.phase = Phase.UNJOINED
        self._pending_lost = bool(self.owned)
        self.request_rejoin(reason)

    # --- requests ----------------------------------------------------------------------------------------------
    def _leave_request(self, generation: Generation, reason: str) -> Send:
        return self._send(_InFlight(_Kind.LEAVE, generation), LeaveGroupRequest(
            group_id=self.config.group_id, members=(MemberIdentity(
                member_id=generation.member_id, group_instance_id=self.config.group_instance_id, reason=reason),)))

    def _heartbeat_in_flight(self) -> bool:
        return any(sent.kind is _Kind.HEARTBEAT for sent in self._in_flight.values())

    def _send(self, sent: _InFlight, request: GroupRequest) -> Send:
        request_id = next(self._ids)
        self._in_flight[request_id] = sent
        return Send(request_id, request)
