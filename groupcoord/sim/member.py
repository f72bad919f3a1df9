"""A simulated consumer: the classic protocol's client side, eager or cooperative, as a real client runs it.

It joins (KIP-394: MEMBER_ID_REQUIRED, then again with the id), syncs (the leader assigns with
:mod:`groupcoord.sim.assignor`), fetches the committed offsets of new partitions, consumes (its position moves one
offset per heartbeat), heartbeats and auto-commits on its intervals, and reacts to errors as Kafka's
``ConsumerCoordinator`` does: REBALANCE_IN_PROGRESS -> rejoin; UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION -> the
partitions are lost (not committed) and it rejoins; a lost connection -> retry after a backoff.
Eager members commit and revoke everything before each JoinGroup; cooperative members keep what they own, report
it in their subscription, and revoke only what the new assignment takes away, then rejoin.

A paused member reads nothing: responses wait in its inbox until it resumes. A static member (KIP-345) sends its
``group.instance.id`` everywhere, does not send LeaveGroup when it closes (its session runs out instead, as in
Kafka), and dies when fenced (FENCED_INSTANCE_ID: another process took its instance id).
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from groupcoord.protocol import Errors
from groupcoord.protocol.consumer_protocol import Subscription, decode_assignment, encode_subscription
from groupcoord.protocol.errors import ErrorCode
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
    OffsetFetchRequest,
    OffsetFetchTopic,
    SyncGroupAssignment,
    SyncGroupRequest,
)
from groupcoord.protocol.responses import (
    GroupResponse,
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    OffsetCommitResponse,
    OffsetFetchResponse,
    SyncGroupResponse,
)
from groupcoord.sim.assignor import TopicPartition, assign, encode_partitions, grouped, read_members

log = logging.getLogger("groupcoord.sim.member")

PROTOCOL_NAMES = {False: "sim-eager", True: "sim-cooperative"}
PROBE_OFFSET = 10**12
"""The offset a probe commit carries: far above any real position, so that an accepted probe stands out."""


class Phase(enum.Enum):
    """Where a member is in the join/sync cycle."""

    UNJOINED = "unjoined"  # must (re)join at retry_at_ms
    JOINING = "joining"  # a JoinGroup is in flight
    SYNCING = "syncing"  # a SyncGroup is in flight
    STABLE = "stable"
    LEFT = "left"  # closed or killed: it never acts again


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


class SimMember:
    """One simulated consumer process in group ``group_id``."""

    def __init__(self, name: str, group_id: str, topics: tuple[str, ...], *, cooperative: bool,
                 timings: MemberTimings, transport: Transport, instance_id: str | None = None) -> None:
        self.name = name
        self.instance_id = instance_id
        self.group_id = group_id
        self.topics = tuple(sorted(topics))
        self.cooperative = cooperative
        self.timings = timings
        self._net = transport
        self.phase = Phase.UNJOINED
        self.member_id = ""
        self.generation = -1
        self.is_leader = False
        self.owned: set[TopicPartition] = set()
        self.positions: dict[TopicPartition, int] = {}
        self.paused = False
        self.inbox: list[tuple[int, GroupResponse, int]] = []
        self.pending: dict[int, str] = {}
        self.unexpected: list[str] = []
        self.assigned_with: dict[str, int] | None = None  # the leader's metadata snapshot (Kafka's assignmentSnapshot)
        self._rejoin_requested = False
        self.retry_at_ms = transport.now_ms()
        self.next_heartbeat_ms = 0
        self.next_commit_ms = 0
        self.last_heard_ms = transport.now_ms()  # when the coordinator last confirmed this member's membership
        self.zombie = False  # a replaced process (events.Restart); fenced, a static zombie stops for good

    # --- lifecycle ---------------------------------------------------------------------------------------------
    @property
    def alive(self) -> bool:
        """False once closed or killed."""
        return self.phase is not Phase.LEFT

    def start(self) -> None:
        """Join the group."""
        self._join()

    def pause(self) -> None:
        """Stop running (GC pause)."""
        self.paused = True

    def resume(self) -> None:
        """Run again: read every response that arrived meanwhile; a stable member heartbeats at once."""
        self.paused = False
        inbox, self.inbox = self.inbox, []
        for token, response, sent_at in inbox:
            self._handle(token, response, sent_at)
        self.next_heartbeat_ms = min(self.next_heartbeat_ms, self._net.now_ms())
        self._lose_if_session_ran_out(self._net.now_ms())

    def close(self) -> None:
        """Commit, revoke and leave the group (a clean shutdown)."""
        if self.paused:
            self.kill()
            return
        if self.member_id:
            self._commit(self.owned)
            if self.instance_id is None:
                self._send("leave", LeaveGroupRequest(group_id=self.group_id,
                                                      members=(MemberIdentity(member_id=self.member_id),)))
        self._drop_all()
        self.phase = Phase.LEFT

    def kill(self) -> None:
        """Die without a word (the coordinator finds out from the session timeout)."""
        self._drop_all()
        self.phase = Phase.LEFT

    def subscribe(self, topics: tuple[str, ...]) -> None:
        """Change the subscription; a new subscription needs a rebalance."""
        if self.paused or tuple(sorted(topics)) == self.topics:
            return
        self.topics = tuple(sorted(topics))
        self._request_rejoin()

    # --- time --------------------------------------------------------------------------------------------------
    def next_due(self) -> int | None:
        """When this member next wants to act on its own, or ``None``."""
        if self.paused or not self.alive:
            return None
        if self.phase is Phase.UNJOINED:
            return self.retry_at_ms
        if self.phase is Phase.STABLE:
            return min(self.next_heartbeat_ms, self.next_commit_ms)
        return None

    def on_time(self, now: int) -> None:
        """Do whatever is due at ``now``: retry a join, or consume, heartbeat and auto-commit."""
        if self.paused or not self.alive:
            return
        self._lose_if_session_ran_out(now)
        if self.phase is Phase.UNJOINED and now >= self.retry_at_ms:
            self._join()
            return
        if self.phase is not Phase.STABLE:
            return
        if self.is_leader and self.assigned_with is not None and self._metadata_changed():
            self._request_rejoin()  # Kafka's leader rejoins when the metadata it assigned with changed
            return
        if now >= self.next_heartbeat_ms:
            for tp in self.owned:
                if tp in self.positions:
                    self.positions[tp] += 1
            self._fetch_missing_positions()
            self.next_heartbeat_ms = now + self.timings.heartbeat_ms
            self._send("heartbeat", HeartbeatRequest(group_id=self.group_id, generation_id=self.generation,
                                                     member_id=self.member_id, group_instance_id=self.instance_id))
        if self.phase is Phase.STABLE and now >= self.next_commit_ms:
            self.next_commit_ms = now + self.timings.commit_interval_ms
            self._commit(self.owned)

    def commit_now(self) -> None:
        """An explicit commit of every position (``commitSync``)."""
        if self.alive and not self.paused and self.phase is Phase.STABLE:
            self._commit(self.owned)

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

    def _handle(self, token: int, response: GroupResponse, sent_at: int) -> None:
        kind = self.pending.pop(token, None)
        if kind is None or not self.alive:
            return
        if kind == "probe":
            return
        error = _top_error(response)
        if kind in ("join", "sync", "heartbeat") and error in (Errors.NONE, Errors.REBALANCE_IN_PROGRESS):
            self.last_heard_ms = max(self.last_heard_ms, sent_at)
        if error == Errors.FENCED_INSTANCE_ID and self.instance_id is not None:
            self.kill()  # Kafka's FencedInstanceIdException: this process is a zombie and must stop
            return
        if error not in _EXPECTED[kind]:
            self.unexpected.append(f"{self.name}: {kind} answered {error.name}")
        if isinstance(response, JoinGroupResponse):
            self._on_join(response)
        elif isinstance(response, SyncGroupResponse):
            self._on_sync(response)
        elif isinstance(response, HeartbeatResponse | OffsetCommitResponse):
            self._on_group_error(error)
        elif isinstance(response, OffsetFetchResponse):
            self._on_fetch(response)

    def _on_join(self, response: JoinGroupResponse) -> None:
        error = response.error
        if error == Errors.MEMBER_ID_REQUIRED:
            self.member_id = response.member_id
            self._join()
        elif error == Errors.NONE:
            self.member_id = response.member_id
            self.generation = response.generation_id
            self.is_leader = response.leader == self.member_id
            assignments: tuple[SyncGroupAssignment, ...] = ()
            if self.is_leader:
                counts = dict(self._net.partition_counts())
                members = read_members(response.members)
                topics = {t for m in members for t in m.topics}
                # With skip_assignment (a static leader rejoined, KIP-814) the current assignment stands, but the
                # leader still watches the metadata from here on.
                self.assigned_with = {t: counts.get(t, 0) for t in sorted(topics)}
                if not response.skip_assignment:
                    plan = assign(members, counts, cooperative=self.cooperative)
                    assignments = tuple(SyncGroupAssignment(m, encode_partitions(ps))
                                        for m, ps in sorted(plan.items()))
            self.phase = Phase.SYNCING
            self._send("sync", SyncGroupRequest(group_id=self.group_id, generation_id=self.generation,
                                                member_id=self.member_id, group_instance_id=self.instance_id,
                                                assignments=assignments))
        elif error == Errors.UNKNOWN_MEMBER_ID:
            self._fenced(error)
        else:
            self._retry_join_later()

    def _on_sync(self, response: SyncGroupResponse) -> None:
        if response.error != Errors.NONE:
            self.phase = Phase.UNJOINED
            if response.error == Errors.NOT_COORDINATOR:
                self._retry_join_later()
            elif response.error in (Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION):
                self._fenced(response.error)
            else:
                self._join()
            return
        assigned = {(tp.topic, p) for tp in decode_assignment(response.assignment).partitions for p in tp.partitions}
        revoked = self.owned - assigned
        if revoked:  # only a cooperative member still owns partitions here
            self._commit(revoked)
            self._drop(revoked)
        self.owned = set(assigned)
        self.phase = Phase.STABLE
        now = self._net.now_ms()
        self.next_heartbeat_ms = now + self.timings.heartbeat_ms
        self.next_commit_ms = now + self.timings.commit_interval_ms
        self._fetch_missing_positions()
        if revoked or self._rejoin_requested:
            self._request_rejoin()

    def _on_fetch(self, response: OffsetFetchResponse) -> None:
        for topic in response.topics:
            for partition in topic.partitions:
                tp = (topic.name, partition.partition)
                if tp in self.owned and tp not in self.positions and not partition.error.is_error:
                    self.positions[tp] = max(partition.offset, 0)

    def _on_group_error(self, error: ErrorCode) -> None:
        """React to the error of a heartbeat or commit."""
        if error == Errors.REBALANCE_IN_PROGRESS:
            self._request_rejoin()
        elif error in (Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION):
            self._fenced(error)

    def _fenced(self, error: ErrorCode) -> None:
        """The coordinator no longer knows this member or generation: the partitions are lost; rejoin.

        A static zombie stops instead: rejoining afresh it would be a twin of its replacement (same instance id)."""
        if self.zombie and self.instance_id is not None:
            self.kill()
            return
        self._lose()
        self.generation = -1
        if error == Errors.UNKNOWN_MEMBER_ID:
            self.member_id = ""
        self.phase = Phase.UNJOINED
        self._join()

    # --- actions -----------------------------------------------------------------------------------------------
    def _lose_if_session_ran_out(self, now: int) -> None:
        """librdkafka's rule: a member that has not heard from the coordinator for a session timeout (outside a
        parked JoinGroup/SyncGroup, during which the coordinator does not expire it) may have been removed, so its
        partitions are lost. Without it a member cut off by a coordinator failover would keep consuming."""
        if (self.owned and self.phase in (Phase.STABLE, Phase.UNJOINED)
                and now - self.last_heard_ms >= self.timings.session_ms):
            self._lose()
            self._request_rejoin()

    def _request_rejoin(self) -> None:
        """Rejoin now, or right after the join round in flight (whose metadata may be outdated) completes."""
        if self.phase in (Phase.JOINING, Phase.SYNCING):
            self._rejoin_requested = True
            return
        self._join()

    def _retry_join_later(self) -> None:
        self.phase = Phase.UNJOINED
        self.retry_at_ms = self._net.now_ms() + self.timings.retry_backoff_ms

    def _join(self) -> None:
        """Prepare (commit; eager: revoke all; cooperative: revoke unsubscribed topics) and send JoinGroup."""
        self._rejoin_requested = False
        self.is_leader = False
        if self.generation >= 0:
            self._commit(self.owned)
        if self.cooperative:
            self._drop({tp for tp in self.owned if tp[0] not in self.topics})
        else:
            self._drop(set(self.owned))
        subscription = Subscription(topics=self.topics, owned_partitions=grouped(self.owned),
                                    generation_id=self.generation)
        self.phase = Phase.JOINING
        self._send("join", JoinGroupRequest(
            group_id=self.group_id, session_timeout_ms=self.timings.session_ms,
            rebalance_timeout_ms=self.timings.rebalance_ms, member_id=self.member_id,
            group_instance_id=self.instance_id, protocol_type="consumer",
            protocols=(JoinGroupProtocol(PROTOCOL_NAMES[self.cooperative], encode_subscription(subscription)),),
            client_id=self.name))

    def _commit(self, partitions: set[TopicPartition]) -> None:
        offsets = sorted((tp, self.positions[tp]) for tp in partitions if tp in self.positions)
        if not offsets or not self.member_id or self.generation < 0:
            return
        by_topic: dict[str, list[OffsetCommitPartition]] = {}
        for (topic, partition), offset in offsets:
            by_topic.setdefault(topic, []).append(OffsetCommitPartition(partition, offset))
        self._send("commit", OffsetCommitRequest(
            group_id=self.group_id, generation_id=self.generation, member_id=self.member_id,
            group_instance_id=self.instance_id,
            topics=tuple(OffsetCommitTopic(t, tuple(ps)) for t, ps in by_topic.items())))

    def _fetch_missing_positions(self) -> None:
        missing = {tp for tp in self.owned if tp not in self.positions}
        if not missing or "fetch" in self.pending.values():
            return
        self._send("fetch", OffsetFetchRequest(group_id=self.group_id, topics=tuple(
            OffsetFetchTopic(tp.topic, tp.partitions) for tp in grouped(missing))))

    def _drop(self, partitions: set[TopicPartition]) -> None:
        self.owned -= partitions
        for tp in partitions:
            self.positions.pop(tp, None)

    def _lose(self) -> None:
        """onPartitionsLost: drop everything without committing."""
        self._drop(set(self.owned))

    def _drop_all(self) -> None:
        self._lose()
        self.inbox = []
        self.pending = {}

    def _metadata_changed(self) -> bool:
        assert self.assigned_with is not None
        counts = self._net.partition_counts()
        return any(counts.get(t, 0) != n for t, n in self.assigned_with.items())

    def _send(self, kind: str, request: GroupRequest) -> None:
        token = self._net.send(self, request)
        self.pending[token] = kind


def _top_error(response: GroupResponse) -> ErrorCode:
    """The error of a response as a whole (for a commit, the first partition error)."""
    if isinstance(response, OffsetCommitResponse):
        errors = [p.error for t in response.topics for p in t.partitions]
        return next((e for e in errors if e.is_error), Errors.NONE)
    if isinstance(response, JoinGroupResponse | SyncGroupResponse | HeartbeatResponse | LeaveGroupResponse
                  | OffsetFetchResponse):
        return response.error
    return Errors.NONE
