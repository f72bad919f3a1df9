"""A simulated member of the consumer group protocol (KIP-848, ``group.protocol=consumer``), as Kafka's
``ConsumerMembershipManager`` and ``HeartbeatRequestManager`` behave, on the simulated network and clock.

The member heartbeats (ConsumerGroupHeartbeat v1: it makes its own member id) with its member epoch and the
partitions it owns, at the interval the coordinator gives. A full heartbeat (rebalance timeout, subscription and
owned partitions) goes out when it joins and after every error, so that its answer carries the assignment; later
ones carry the subscription only when it changed. Each answer's assignment is reconciled at once, revoking first:
the member commits the positions of the partitions it loses, drops them, takes what it was given (the coordinator
gives a partition only once its previous owner released it), and heartbeats again at once to acknowledge. It
fetches the committed offsets of new partitions (OffsetFetch at its member epoch), consumes one offset per heartbeat
interval, and auto-commits with its member epoch.

Errors as Kafka's client takes them: FENCED_MEMBER_EPOCH and UNKNOWN_MEMBER_ID lose every partition (no commit) and
rejoin with epoch 0 and the same member id; FENCED_INSTANCE_ID stops the process; UNRELEASED_INSTANCE_ID (a static
member whose previous incarnation is still in the group) loses its partitions and retries the join after a backoff,
as a supervisor restarting the process would; NOT_COORDINATOR keeps the partitions and retries, full, after a
backoff. A member that had no heartbeat answered for a session timeout (counted from when that heartbeat was sent,
which is when the coordinator restarted its session) drops its partitions as lost before anything else, and rejoins.

Closing commits, revokes everything and sends a leaving heartbeat: epoch -1, or -2 for a static member, which keeps
its assignment for its next incarnation (KIP-848's temporary leave). A paused member reads nothing: responses wait
in its inbox until it resumes.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Mapping
from typing import Protocol
from uuid import UUID

from groupcoord.protocol import Errors
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.requests import (
    ConsumerGroupHeartbeatRequest,
    GroupRequest,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitTopic,
    OffsetFetchRequest,
    OffsetFetchTopic,
)
from groupcoord.protocol.responses import (
    ConsumerGroupHeartbeatResponse,
    GroupResponse,
    OffsetCommitResponse,
    OffsetFetchResponse,
)
from groupcoord.sim.member import PROBE_OFFSET, MemberTimings

log = logging.getLogger("groupcoord.sim.consumer")

Key = tuple[str, int]
"""A partition by topic name."""

UNRELEASED_BACKOFF_MS = 1000
"""How long a static member waits before joining again after UNRELEASED_INSTANCE_ID."""

_EXPECTED: dict[str, frozenset[ErrorCode]] = {
    "heartbeat": frozenset({Errors.NONE, Errors.FENCED_MEMBER_EPOCH, Errors.UNKNOWN_MEMBER_ID,
                            Errors.NOT_COORDINATOR}),
    "leave": frozenset({Errors.NONE, Errors.UNKNOWN_MEMBER_ID, Errors.FENCED_MEMBER_EPOCH, Errors.NOT_COORDINATOR}),
    "commit": frozenset({Errors.NONE, Errors.STALE_MEMBER_EPOCH, Errors.UNKNOWN_MEMBER_ID, Errors.NOT_COORDINATOR}),
    "fetch": frozenset({Errors.NONE, Errors.STALE_MEMBER_EPOCH, Errors.UNKNOWN_MEMBER_ID, Errors.NOT_COORDINATOR}),
}
"""Errors a correct coordinator may answer a well-behaved consumer-protocol member with (a static member may also
get FENCED_INSTANCE_ID and UNRELEASED_INSTANCE_ID); anything else is a finding."""

_STATIC_ONLY = frozenset({Errors.FENCED_INSTANCE_ID, Errors.UNRELEASED_INSTANCE_ID})


class ConsumerTransport(Protocol):
    """What a consumer-protocol member needs from the simulated world."""

    def now_ms(self) -> int:
        """Simulated time."""
        ...

    def send(self, member: SimConsumer, request: GroupRequest) -> int:
        """Hand ``request`` to the coordinator; the response arrives later through :meth:`SimConsumer.deliver`."""
        ...

    def topic_ids(self) -> Mapping[str, UUID]:
        """The topic ids a client learns from Metadata."""
        ...


class SimConsumer:
    """One simulated consumer-protocol process in group ``group_id``."""

    def __init__(self, name: str, group_id: str, topics: tuple[str, ...], *, member_id: str,
                 timings: MemberTimings, transport: ConsumerTransport, instance_id: str | None = None) -> None:
        self.name = name
        self.group_id = group_id
        self.instance_id = instance_id
        self.timings = timings
        self._net = transport
        self.member_id = member_id
        self.epoch = 0
        self.topics = tuple(sorted(topics))
        self.owned: frozenset[Key] = frozenset()
        self.positions: dict[Key, int] = {}
        self.paused = False
        self.left = False
        self.zombie = False
        self.stalled = False  # the application thread is stuck; the heartbeat thread runs on (events.Stall)
        self._stalled_since = 0
        self._deferred: Mapping[UUID, frozenset[int]] | None = None  # an assignment the stalled thread has not seen
        self._waiting_for_app = False  # left or fenced while stalled: rejoins only once the application polls
        self.inbox: list[tuple[int, GroupResponse]] = []
        self.pending: dict[int, str] = {}  # transport token -> kind
        self.unexpected: list[str] = []
        self._full = True  # the next heartbeat carries everything (a join, or after an error)
        self._subscription_changed = False
        self._sent_at: dict[int, int] = {}  # heartbeat token -> when it was sent
        self._fetches: dict[int, dict[Key, int]] = {}  # fetch token -> the acquisition of each partition asked for
        self._acquired: dict[Key, int] = {}  # partition -> which acquisition of it this is
        self._acquisitions = itertools.count(1)
        now = transport.now_ms()
        self.last_answer_ms = now
        self.heartbeat_at_ms = now
        self.commit_at_ms = now + timings.commit_interval_ms

    # --- what the invariants read ------------------------------------------------------------------------------
    @property
    def alive(self) -> bool:
        """False once closed or killed."""
        return not self.left

    @property
    def heartbeat_in_flight(self) -> bool:
        """True while a heartbeat waits for its answer."""
        return any(kind in ("heartbeat", "leave") for kind in self.pending.values())

    @property
    def settled(self) -> bool:
        """Nothing in flight or unread, no full heartbeat owed and no subscription change to send."""
        return (not self.pending and not self.inbox and not self._full and not self._subscription_changed
                and self.epoch > 0 and not self.stalled)

    # --- lifecycle ---------------------------------------------------------------------------------------------
    def start(self) -> None:
        """Join the group (epoch 0)."""
        self._heartbeat()

    def pause(self) -> None:
        """Stop running (GC pause)."""
        self.paused = True

    def resume(self) -> None:
        """Run again: read every response that arrived meanwhile, then act; a stalled application thread catches
        up with the last assignment its heartbeat thread received."""
        self.paused = False
        inbox, self.inbox = self.inbox, []
        for token, response in inbox:
            self._handle(token, response)
        if self.stalled and self.alive:
            self.stalled = False
            if self._waiting_for_app:
                self._waiting_for_app = False
                self.heartbeat_at_ms = self._net.now_ms()
            deferred, self._deferred = self._deferred, None
            if deferred is not None:
                self._reconcile(deferred)
        self.on_time(self._net.now_ms())

    def stall(self) -> None:
        """The application thread stops; heartbeats go on (see ``events.Stall``)."""
        if self.alive and not self.paused and not self.stalled:
            self.stalled = True
            self._stalled_since = self._net.now_ms()

    def close(self) -> None:
        """Commit, revoke everything and leave (epoch -1; -2 for a static member). A paused member is killed."""
        if self.paused or not self.alive:
            self.kill()
            return
        if self.epoch > 0:
            self._commit(self._positions_of(self.owned), self.epoch)
            leaving = -2 if self.instance_id is not None else -1
            self._send("leave", ConsumerGroupHeartbeatRequest(
                group_id=self.group_id, member_id=self.member_id, member_epoch=leaving,
                instance_id=self.instance_id, client_id=self.name))
        self.kill()

    def kill(self) -> None:
        """Die without a word (the coordinator finds out from the session timeout)."""
        self.left = True
        self.owned = frozenset()
        self.positions, self.inbox, self.pending = {}, [], {}

    def subscribe(self, topics: tuple[str, ...]) -> None:
        """Change the subscription; it goes out with the next heartbeat, sent now."""
        if self.paused or not self.alive or tuple(sorted(topics)) == self.topics:
            return
        self.topics = tuple(sorted(topics))
        self._subscription_changed = True
        self.heartbeat_at_ms = self._net.now_ms()
        self.on_time(self._net.now_ms())

    # --- time --------------------------------------------------------------------------------------------------
    def next_due(self) -> int | None:
        """When this member next wants to act on its own, or ``None``."""
        if self.paused or not self.alive:
            return None
        wake = [] if self.heartbeat_in_flight or self._waiting_for_app else [self.heartbeat_at_ms]
        if self.epoch > 0 and self.owned and not self.stalled:
            wake.append(self.commit_at_ms)
        return math.ceil(min(wake)) if wake else None

    def on_time(self, now: int) -> None:
        """Do whatever is due at ``now``: drop partitions after a silent session, heartbeat, auto-commit."""
        if self.paused or not self.alive:
            return
        if self.owned and now - self.last_answer_ms >= self.timings.session_ms:
            self._lose("no heartbeat answered for a session")
        if self.epoch > 0 and self.owned and now >= self.commit_at_ms and not self.stalled:
            self.commit_at_ms = now + self.timings.commit_interval_ms
            self._commit(self._positions_of(self.owned), self.epoch)
        if not self.alive or self.heartbeat_in_flight or self._waiting_for_app or now < self.heartbeat_at_ms:
            return
        if self.stalled and self.epoch > 0 and now - self._stalled_since >= self.timings.rebalance_ms:
            self._leave_stale()
            return
        if not self.stalled:
            self._consume()
        self._heartbeat()

    def _leave_stale(self) -> None:
        """The application thread has not polled for the rebalance timeout (Kafka's ``max.poll.interval.ms``): the
        heartbeat thread leaves the group (-1; -2 for a static member) and the partitions are lost; the member
        rejoins once the application polls again."""
        leaving = -2 if self.instance_id is not None else -1
        epoch_was = self.epoch
        self._lose("the application did not poll within the rebalance timeout")
        self._waiting_for_app = True
        self._deferred = None
        if epoch_was > 0:
            self._send("leave", ConsumerGroupHeartbeatRequest(
                group_id=self.group_id, member_id=self.member_id, member_epoch=leaving,
                instance_id=self.instance_id, client_id=self.name))

    def commit_now(self) -> None:
        """An explicit commit of every position (``commitSync``)."""
        if self.alive and not self.paused and self.epoch > 0:
            self._commit(self._positions_of(self.owned), self.epoch)

    def commit_previous(self) -> None:
        """A commit of every position at the member's previous epoch, which Kafka accepts for partitions the member
        was assigned at or before it (KIP-1251) and rejects otherwise."""
        if self.alive and not self.paused and self.epoch > 0:
            self._commit(self._positions_of(self.owned), self.epoch - 1)

    def probe(self, epoch: int) -> None:
        """A commit at ``epoch`` (newer than the member's in the coordinator) that the coordinator must reject."""
        if not self.alive or self.paused or self.epoch <= 0:
            return
        key = min(self.owned) if self.owned else (self.topics[0], 0)
        self._commit({key: PROBE_OFFSET}, epoch, kind="probe")

    # --- responses ---------------------------------------------------------------------------------------------
    def deliver(self, token: int, response: GroupResponse) -> None:
        """A response for one of this member's requests (queued while paused)."""
        if not self.alive:
            return
        if self.paused:
            self.inbox.append((token, response))
            return
        self._handle(token, response)
        self.on_time(self._net.now_ms())

    def _handle(self, token: int, response: GroupResponse) -> None:
        kind = self.pending.pop(token, None)
        sent_at = self._sent_at.pop(token, None)
        asked = self._fetches.pop(token, None)
        if kind is None or kind == "probe" or not self.alive:
            return
        error = _error_of(response)
        if error not in _EXPECTED[kind] and not (self.instance_id is not None and error in _STATIC_ONLY):
            self.unexpected.append(f"{self.name}: {kind} answered {error.name}")
        if kind == "heartbeat" and isinstance(response, ConsumerGroupHeartbeatResponse):
            self._on_heartbeat(response, sent_at if sent_at is not None else self._net.now_ms())
        elif kind == "fetch" and isinstance(response, OffsetFetchResponse) and asked is not None:
            self._on_fetch(response, asked)

    def _on_heartbeat(self, response: ConsumerGroupHeartbeatResponse, sent_at: int) -> None:
        error = response.error
        now = self._net.now_ms()
        if error == Errors.NONE:
            self.last_answer_ms = max(self.last_answer_ms, sent_at)
            self.epoch = response.member_epoch
            self._full = False
            self.heartbeat_at_ms = now + (response.heartbeat_interval_ms or self.timings.heartbeat_ms)
            if response.assignment is not None:
                if self.stalled:
                    self._deferred = response.assignment
                else:
                    self._reconcile(response.assignment)
            return
        self._full = True
        if error == Errors.FENCED_INSTANCE_ID or (self.zombie and error in (
                Errors.FENCED_MEMBER_EPOCH, Errors.UNKNOWN_MEMBER_ID, Errors.UNRELEASED_INSTANCE_ID)):
            self.kill()  # another process holds the instance (or replaced this one): stop, as Kafka's client does
        elif error in (Errors.FENCED_MEMBER_EPOCH, Errors.UNKNOWN_MEMBER_ID):
            self._lose(f"fenced: {error.name}")
            if self.stalled:  # the lost partitions go through the application thread before the member rejoins
                self._waiting_for_app = True
                self._deferred = None
        elif error == Errors.UNRELEASED_INSTANCE_ID:
            self._lose("the instance id is not released yet")
            self.heartbeat_at_ms = now + UNRELEASED_BACKOFF_MS
        else:
            self.heartbeat_at_ms = now + self.timings.retry_backoff_ms

    def _reconcile(self, assignment: Mapping[UUID, frozenset[int]]) -> None:
        """Revoke first (commit, then drop), then take what was given, then acknowledge with a heartbeat now."""
        names = {topic_id: name for name, topic_id in self._net.topic_ids().items()}
        target = frozenset((names[t], p) for t, ps in assignment.items() if t in names for p in ps)
        revoked = self.owned - target
        if revoked:
            self._commit(self._positions_of(revoked), self.epoch)
        added = target - self.owned
        for key in added:
            self._acquired[key] = next(self._acquisitions)
        self.owned = target
        self.positions = {k: v for k, v in self.positions.items() if k in target}
        if revoked or added:
            self.heartbeat_at_ms = self._net.now_ms()
        self._fetch_missing_positions()

    def _lose(self, why: str) -> None:
        """Drop every partition without committing (Kafka's ``onPartitionsLost``) and rejoin with epoch 0."""
        log.debug("%s loses %s: %s", self.name, sorted(self.owned), why)
        self.owned = frozenset()
        self.positions = {}
        self.epoch = 0
        self._full = True
        self.heartbeat_at_ms = self._net.now_ms()
        self.last_answer_ms = self._net.now_ms()

    def _on_fetch(self, response: OffsetFetchResponse, asked: Mapping[Key, int]) -> None:
        """Use a fetched offset only for a partition still owned since the fetch was sent (not lost and taken
        again meanwhile, when its owner in between may have committed further)."""
        for topic in response.topics:
            for partition in topic.partitions:
                key = (topic.name, partition.partition)
                if (key in self.owned and key not in self.positions and not partition.error.is_error
                        and asked.get(key) == self._acquired.get(key)):
                    self.positions[key] = max(partition.offset, 0)

    # --- requests ----------------------------------------------------------------------------------------------
    def _heartbeat(self) -> None:
        joining = self.epoch == 0
        full = self._full or joining
        ids = self._net.topic_ids()
        owned: dict[UUID, list[int]] = {}
        for topic, partition in sorted(self.owned):
            owned.setdefault(ids[topic], []).append(partition)
        send_topics = full or self._subscription_changed
        self._subscription_changed = False
        token = self._send("heartbeat", ConsumerGroupHeartbeatRequest(
            group_id=self.group_id, member_id=self.member_id, member_epoch=self.epoch, instance_id=self.instance_id,
            rebalance_timeout_ms=self.timings.rebalance_ms if full else -1,
            subscribed_topic_names=self.topics if send_topics else None,
            topic_partitions={} if joining else owned, client_id=self.name))
        self._sent_at[token] = self._net.now_ms()

    def _consume(self) -> None:
        """Each heartbeat, a member reads one record of every partition it has a position in."""
        for key in self.owned:
            if key in self.positions:
                self.positions[key] += 1
        self._fetch_missing_positions()

    def _positions_of(self, keys: frozenset[Key]) -> dict[Key, int]:
        return {k: v for k, v in self.positions.items() if k in keys}

    def _commit(self, offsets: Mapping[Key, int], epoch: int, *, kind: str = "commit") -> None:
        if not offsets or epoch <= 0:
            return
        by_topic: dict[str, list[OffsetCommitPartition]] = {}
        for (topic, partition), offset in sorted(offsets.items()):
            by_topic.setdefault(topic, []).append(OffsetCommitPartition(partition, offset))
        self._send(kind, OffsetCommitRequest(
            group_id=self.group_id, generation_id=epoch, member_id=self.member_id,
            group_instance_id=self.instance_id,
            topics=tuple(OffsetCommitTopic(t, tuple(ps)) for t, ps in sorted(by_topic.items()))))

    def _fetch_missing_positions(self) -> None:
        missing = sorted(k for k in self.owned if k not in self.positions)
        if not missing or self.epoch <= 0 or "fetch" in self.pending.values():
            return
        by_topic: dict[str, list[int]] = {}
        for topic, partition in missing:
            by_topic.setdefault(topic, []).append(partition)
        token = self._send("fetch", OffsetFetchRequest(
            group_id=self.group_id, member_id=self.member_id, member_epoch=self.epoch,
            topics=tuple(OffsetFetchTopic(t, tuple(ps)) for t, ps in sorted(by_topic.items()))))
        if self.alive:
            self._fetches[token] = {k: self._acquired.get(k, 0) for k in missing}

    def _send(self, kind: str, request: GroupRequest) -> int:
        token = self._net.send(self, request)
        if self.alive:
            self.pending[token] = kind
        return token


def _error_of(response: GroupResponse) -> ErrorCode:
    """The error of a response as a whole (for a commit, the first partition error)."""
    if isinstance(response, OffsetCommitResponse):
        for topic in response.topics:
            for partition in topic.partitions:
                if partition.error.is_error:
                    return partition.error
        return Errors.NONE
    error: ErrorCode = getattr(response, "error", Errors.NONE)
    return error

