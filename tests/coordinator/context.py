"""A test context for the coordinator core: a manual clock whose ``sleep`` fires timers, a record log that every
result is persisted to, and builders that drive the group through the production handlers."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from groupcoord.coordinator import (
    CompleteAssignment,
    CoordinatorConfig,
    CoordinatorResult,
    GroupCoordinator,
    ManualClock,
    NeedsAssignment,
    decode_record,
    encode_record,
)
from groupcoord.group import ClassicGroup
from groupcoord.log.base import RecordLog
from groupcoord.protocol import (
    Errors,
    GroupRequest,
    GroupResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupProtocol,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    MemberIdentity,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitTopic,
    SyncGroupAssignment,
    SyncGroupRequest,
    SyncGroupResponse,
)
from groupcoord.protocol.consumer_protocol import (
    Assignment,
    Subscription,
    TopicPartitions,
    encode_assignment,
    encode_subscription,
)
from tests.narrowing import present

SESSION_MS = 10_000
REBALANCE_MS = 30_000
INITIAL_DELAY_MS = 3000
TEST_CONFIG = CoordinatorConfig(initial_rebalance_delay_ms=INITIAL_DELAY_MS, min_session_timeout_ms=1000,
                                max_session_timeout_ms=60_000)


def subscription(*topics: str) -> bytes:
    """ConsumerProtocol Subscription metadata for ``topics``."""
    return encode_subscription(Subscription(topics=tuple(topics)))


def protocols(*names: str, topics: Sequence[str] = ("t",)) -> tuple[JoinGroupProtocol, ...]:
    """One protocol per name, all carrying a subscription to ``topics``."""
    return tuple(JoinGroupProtocol(name, subscription(*topics)) for name in names)


def round_robin(member_ids: Sequence[str], partition_counts: Mapping[str, int]) -> dict[str, bytes]:
    """A real (small) assignor: partitions of the sorted topics dealt to the sorted members in turn.

    Example: members [a, b], topic t with 3 partitions -> a: t[0, 2], b: t[1].
    """
    members = sorted(member_ids)
    owned: dict[str, dict[str, list[int]]] = {m: {} for m in members}
    slots = itertools.cycle(members)
    for topic in sorted(partition_counts):
        for partition in range(partition_counts[topic]):
            owned[next(slots)].setdefault(topic, []).append(partition)
    return {m: encode_assignment(Assignment(partitions=tuple(TopicPartitions(t, tuple(ps))
                                                              for t, ps in sorted(owned[m].items()))))
            for m in members}


class CoordinatorTestContext:
    """Drives one :class:`GroupCoordinator` on a manual clock and persists every result to ``record_log``."""

    def __init__(self, record_log: RecordLog, config: CoordinatorConfig = TEST_CONFIG, *, start_ms: int = 0) -> None:
        self.clock = ManualClock(start_ms)
        self.log = record_log
        self.config = config
        counter = itertools.count(1)
        self.coordinator = GroupCoordinator(config, member_id_factory=lambda p: f"{p or 'member'}-{next(counter)}")
        self.responses: dict[int, GroupResponse] = {}
        self.effects: list[NeedsAssignment] = []
        self.results: list[CoordinatorResult] = []
        self._tokens = itertools.count(1)

    @property
    def now(self) -> int:
        """The manual clock's time."""
        return self.clock.now_ms()

    def absorb(self, result: CoordinatorResult) -> CoordinatorResult:
        """Persist ``result``'s records (one batch) and collect its responses and effects."""
        if result.records:
            self.log.append([encode_record(r) for r in result.records], expected_version=self.log.version())
        for token, response in result.responses:
            assert isinstance(token, int)
            assert token not in self.responses, f"request {token} answered twice"
            self.responses[token] = response
        self.effects.extend(e for e in result.effects if isinstance(e, NeedsAssignment))
        self.results.append(result)
        return result

    # --- entry points ------------------------------------------------------------------------------------------
    def send(self, request: GroupRequest) -> int:
        """Hand ``request`` to the coordinator now; returns its token."""
        token = next(self._tokens)
        self.absorb(self.coordinator.handle(request, self.now, token))
        return token

    def call(self, request: GroupRequest) -> Any:
        """Send ``request`` and return its (immediate) response."""
        token = self.send(request)
        assert token in self.responses, f"{type(request).__name__} got no immediate response"
        return self.responses[token]

    def response(self, token: int) -> Any:
        """The response to request ``token``, or ``None`` while it is parked."""
        return self.responses.get(token)

    def group(self, group_id: str) -> ClassicGroup:
        """The coordinator's group ``group_id``, which the test knows to exist."""
        return present(self.coordinator.group(group_id))

    def sleep(self, ms: int) -> None:
        """Let ``ms`` pass, firing every timer due meanwhile."""
        self.clock.advance(ms)
        self.absorb(self.coordinator.advance(self.now))

    def complete_assignment(self, answer: CompleteAssignment) -> CoordinatorResult:
        """Submit a server-side assignment."""
        return self.absorb(self.coordinator.complete_assignment(answer, self.now))

    def metadata_change(self, partition_counts: Mapping[str, int]) -> CoordinatorResult:
        """Report topic partition counts."""
        return self.absorb(self.coordinator.on_metadata_change(partition_counts, self.now))

    def reloaded(self) -> CoordinatorTestContext:
        """A new coordinator (same log, same clock) that loaded the log: a coordinator failover."""
        other = CoordinatorTestContext(self.log, self.config, start_ms=self.now)
        for encoded in self.log.load().records:
            other.coordinator.replay(decode_record(encoded))
        other.absorb(other.coordinator.on_loaded(other.now))
        return other

    # --- request builders --------------------------------------------------------------------------------------
    def join(self, group_id: str, member_id: str = "", *, instance_id: str | None = None,
             protos: tuple[JoinGroupProtocol, ...] | None = None, session_ms: int = SESSION_MS,
             rebalance_ms: int = REBALANCE_MS, client_id: str = "client") -> int:
        """Send a JoinGroup; returns its token."""
        return self.send(JoinGroupRequest(
            group_id=group_id, session_timeout_ms=session_ms, rebalance_timeout_ms=rebalance_ms,
            member_id=member_id, group_instance_id=instance_id, protocol_type="consumer",
            protocols=protos if protos is not None else protocols("range"), client_id=client_id))

    def join_new(self, group_id: str, **kwargs: Any) -> tuple[str, int]:
        """A dynamic member joins the KIP-394 way: MEMBER_ID_REQUIRED, then JoinGroup again with that id.
        Returns the member id and the token of the second JoinGroup."""
        first = self.response(self.join(group_id, **kwargs))
        assert isinstance(first, JoinGroupResponse) and first.error == Errors.MEMBER_ID_REQUIRED, first
        return first.member_id, self.join(group_id, first.member_id, **kwargs)

    def sync(self, group_id: str, generation: int, member_id: str,
             assignments: Mapping[str, bytes] | None = None, **kwargs: Any) -> int:
        """Send a SyncGroup; returns its token."""
        return self.send(SyncGroupRequest(
            group_id=group_id, generation_id=generation, member_id=member_id,
            assignments=tuple(SyncGroupAssignment(m, a) for m, a in (assignments or {}).items()), **kwargs))

    def heartbeat(self, group_id: str, generation: int, member_id: str,
                  instance_id: str | None = None) -> HeartbeatResponse:
        """Send a Heartbeat and return its response."""
        response: HeartbeatResponse = self.call(HeartbeatRequest(
            group_id=group_id, generation_id=generation, member_id=member_id, group_instance_id=instance_id))
        return response

    def leave(self, group_id: str, *members: MemberIdentity) -> Any:
        """Send a LeaveGroup and return its response."""
        return self.call(LeaveGroupRequest(group_id=group_id, members=members))

    def commit(self, group_id: str, offsets: Mapping[tuple[str, int], int], *, generation: int = -1,
               member_id: str = "", metadata: str = "", retention_ms: int = -1) -> OffsetCommitResponse:
        """Commit ``offsets`` ({(topic, partition): offset}) and return the response."""
        by_topic: dict[str, list[OffsetCommitPartition]] = {}
        for (topic, partition), offset in offsets.items():
            by_topic.setdefault(topic, []).append(OffsetCommitPartition(partition, offset, metadata=metadata))
        response: OffsetCommitResponse = self.call(OffsetCommitRequest(
            group_id=group_id, generation_id=generation, member_id=member_id, retention_time_ms=retention_ms,
            topics=tuple(OffsetCommitTopic(t, tuple(ps)) for t, ps in by_topic.items())))
        return response

    # --- scenario builders -------------------------------------------------------------------------------------
    def stable_group(self, group_id: str, count: int, *, partitions: Mapping[str, int] | None = None,
                     **join_kwargs: Any) -> tuple[list[str], int]:
        """Bring ``count`` new members to a Stable generation through real JoinGroup/SyncGroup calls.

        The leader assigns with :func:`round_robin`. Returns the member ids (join order) and the generation.
        """
        tokens = {}
        for _ in range(count):
            member_id, token = self.join_new(group_id, **join_kwargs)
            tokens[member_id] = token
        self.sleep_until_answered(tokens.values())
        self.assert_all_joined(tokens.values())
        joined = {m: self.response(t) for m, t in tokens.items()}
        generation = next(iter(joined.values())).generation_id
        leader = next(iter(joined.values())).leader
        sync_tokens = [self.sync(group_id, generation, m) for m in tokens if m != leader]
        assignment = round_robin(list(tokens), partitions or {"t": 6})
        sync_tokens.append(self.sync(group_id, generation, leader, assignment))
        for token in sync_tokens:
            assert self.response(token).error == Errors.NONE
        return list(tokens), generation

    def sleep_until_answered(self, tokens: Any, *, step_ms: int = 1000, limit_ms: int = 600_000) -> None:
        """Sleep in steps until every request in ``tokens`` has its response."""
        waited = 0
        while any(t not in self.responses for t in tokens):
            assert waited < limit_ms, "requests still parked"
            self.sleep(step_ms)
            waited += step_ms

    def assert_all_joined(self, tokens: Any) -> list[JoinGroupResponse]:
        """Every JoinGroup in ``tokens`` succeeded; returns their responses."""
        responses = [self.response(t) for t in tokens]
        assert all(isinstance(r, JoinGroupResponse) and r.error == Errors.NONE for r in responses), responses
        return responses

    def sync_response(self, token: int) -> SyncGroupResponse:
        """The (delivered) SyncGroup response of ``token``."""
        response = self.response(token)
        assert isinstance(response, SyncGroupResponse), response
        return response
