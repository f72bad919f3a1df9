"""A test context for consumer groups (KIP-848) in the core: one :class:`GroupCoordinator` on a manual clock, every
result persisted to a record log, heartbeats by name, and a shell that answers ``NeedsTargetAssignment`` with a
small deterministic uniform assignor (:func:`uniform_target`), at once or when the test says so.

Topics: ``t`` (4 partitions) and ``u`` (2 partitions), with fixed ids ``T`` and ``U``.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Mapping, Sequence
from uuid import UUID

from groupcoord.coordinator import (
    CompleteTargetAssignment,
    CoordinatorConfig,
    CoordinatorResult,
    GroupCoordinator,
    ManualClock,
    NeedsTargetAssignment,
    decode_record,
    encode_record,
)
from groupcoord.log.base import RecordLog
from groupcoord.protocol import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, GroupRequest
from groupcoord.protocol.responses import GroupResponse

T = UUID(int=0x7)
U = UUID(int=0x8)
TOPICS = {"t": (T, 4), "u": (U, 2)}
SESSION_MS = 45_000
REBALANCE_MS = 30_000
CONFIG = CoordinatorConfig(consumer_group_session_timeout_ms=SESSION_MS)


def uniform_target(effect: NeedsTargetAssignment) -> dict[str, dict[UUID, frozenset[int]]]:
    """Each topic's partitions in contiguous ranges over its subscribers sorted by id, the first ranges one longer.

    Example: t (4 partitions), members a and b subscribed: a gets t-0, t-1 and b gets t-2, t-3.
    """
    target: dict[str, dict[UUID, frozenset[int]]] = {m.member_id: {} for m in effect.members}
    for topic in effect.topics:
        subscribers = sorted(m.member_id for m in effect.members if topic.topic_id in m.subscribed_topic_ids)
        start = 0
        for index, member_id in enumerate(subscribers):
            count = topic.partitions // len(subscribers) + (1 if index < topic.partitions % len(subscribers) else 0)
            if count:
                target[member_id][topic.topic_id] = frozenset(range(start, start + count))
            start += count
    return target


def parts(topic: UUID = T, *partitions: int) -> dict[UUID, frozenset[int]]:
    """Partitions of one topic."""
    return {topic: frozenset(partitions)}


class ConsumerGroupContext:
    """Drives consumer groups through the production handlers; ``auto_assign`` answers every target at once."""

    def __init__(self, record_log: RecordLog, *, config: CoordinatorConfig = CONFIG, auto_assign: bool = True,
                 start_ms: int = 0) -> None:
        self.clock = ManualClock(start_ms)
        self.config = config
        self.log = record_log
        counter = itertools.count(1)
        self.coordinator = GroupCoordinator(config, member_id_factory=lambda p: f"{p or 'member'}-{next(counter)}")
        self.auto_assign = auto_assign
        self.responses: dict[int, GroupResponse] = {}
        self.pending: list[NeedsTargetAssignment] = []
        self.records: list[object] = []
        self._tokens = itertools.count(1)
        self.absorb(self.coordinator.on_metadata_change(
            {name: count for name, (_, count) in TOPICS.items()}, self.now,
            topic_ids={name: topic_id for name, (topic_id, _) in TOPICS.items()}))

    @property
    def now(self) -> int:
        """The manual clock's time."""
        return self.clock.now_ms()

    def absorb(self, result: CoordinatorResult) -> None:
        """Persist ``result``'s records, collect its responses, and answer its target requests when automatic."""
        if result.records:
            self.log.append([encode_record(r) for r in result.records], expected_version=self.log.version())
            self.records.extend(result.records)
        for token, response in result.responses:
            assert isinstance(token, int)
            assert token not in self.responses, f"request {token} answered twice"
            self.responses[token] = response
        self.pending.extend(e for e in result.effects if isinstance(e, NeedsTargetAssignment))
        if self.auto_assign:
            self.assign_pending()

    def assign_pending(self) -> None:
        """Answer every pending target request with :func:`uniform_target` (stale ones are dropped by the core)."""
        while self.pending:
            effect = self.pending.pop(0)
            self.absorb(self.coordinator.complete_target_assignment(CompleteTargetAssignment(
                group_id=effect.group_id, group_epoch=effect.group_epoch, assignment=uniform_target(effect)),
                self.now))

    def call(self, request: GroupRequest) -> int:
        """Hand ``request`` to the coordinator now; returns its token."""
        token = next(self._tokens)
        self.absorb(self.coordinator.handle(request, self.now, token))
        return token

    def response(self, token: int) -> GroupResponse | None:
        """The response to ``token``, if sent yet."""
        return self.responses.get(token)

    def heartbeat(self, request: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
        """Send a heartbeat and return its answer (which must have come)."""
        token = next(self._tokens)
        self.absorb(self.coordinator.consumer_group_heartbeat(request, self.now, token))
        response = self.responses.get(token)
        assert isinstance(response, ConsumerGroupHeartbeatResponse), f"no answer yet: {response}"
        return response

    def join(self, member_id: str, *topics: str, group: str = "g", instance_id: str | None = None,
             assignor: str | None = None) -> ConsumerGroupHeartbeatResponse:
        """A member joins (epoch 0) subscribed to ``topics`` (``t`` when none are given)."""
        return self.heartbeat(ConsumerGroupHeartbeatRequest(
            group_id=group, member_id=member_id, member_epoch=0, instance_id=instance_id,
            rebalance_timeout_ms=REBALANCE_MS, subscribed_topic_names=topics or ("t",), server_assignor=assignor,
            topic_partitions={}))

    def beat(self, member_id: str, epoch: int, owned: Mapping[UUID, Collection[int]] | None = None, *,
             group: str = "g", instance_id: str | None = None,
             topics: Sequence[str] | None = None) -> ConsumerGroupHeartbeatResponse:
        """A regular heartbeat at ``epoch`` reporting ``owned`` (``None``: not reported)."""
        return self.heartbeat(ConsumerGroupHeartbeatRequest(
            group_id=group, member_id=member_id, member_epoch=epoch, instance_id=instance_id,
            subscribed_topic_names=None if topics is None else tuple(topics), topic_partitions=owned))

    def leave(self, member_id: str, epoch: int = -1, *, group: str = "g",
              instance_id: str | None = None) -> ConsumerGroupHeartbeatResponse:
        """A leaving heartbeat (-1, or -2 for a static member leaving for a while)."""
        return self.heartbeat(ConsumerGroupHeartbeatRequest(
            group_id=group, member_id=member_id, member_epoch=epoch, instance_id=instance_id))

    def sleep(self, ms: int) -> None:
        """Advance the clock by ``ms`` and fire the timers due."""
        self.clock.advance(ms)
        self.absorb(self.coordinator.advance(self.now))

    def reloaded(self, *, auto_assign: bool | None = None) -> ConsumerGroupContext:
        """A fresh coordinator that replayed this log, loaded at the current time, on the same log; its shell
        answers targets at once when ``auto_assign`` (by default, as this context's does)."""
        fresh = ConsumerGroupContext(self.log, config=self.config,
                                     auto_assign=self.auto_assign if auto_assign is None else auto_assign,
                                     start_ms=self.now)
        fresh.coordinator = GroupCoordinator(self.config)
        for record in self.log.load().records:
            fresh.coordinator.replay(decode_record(record))
        fresh.absorb(fresh.coordinator.on_metadata_change(
            {name: count for name, (_, count) in TOPICS.items()}, fresh.now,
            topic_ids={name: topic_id for name, (topic_id, _) in TOPICS.items()}))
        fresh.absorb(fresh.coordinator.on_loaded(fresh.now))
        return fresh
