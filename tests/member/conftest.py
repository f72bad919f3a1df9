"""A real coordinator for member tests: the pure core behind a CoordinatorService on a 127.0.0.1 endpoint,
persisting into an in-memory record log, with the topic catalog and election lease of a real state root.

Server-side (``server-*``) groups are assigned by :func:`balanced_assignment`, a small pure-Python sticky
assignor run as the service's effect handler (the lead's Spark-backed runner is wired in ``serve``). Restarting
replays the log into a fresh core on a new port and moves the lease there, as a coordinator failover does.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kafka.structs import TopicPartition

from groupcoord.coordinator import CoordinatorConfig, GroupCoordinator
from groupcoord.coordinator.effects import AssignmentMember, CompleteAssignment, NeedsAssignment
from groupcoord.coordinator.records import decode_record
from groupcoord.log.base import split_control
from groupcoord.log.config import LeaseConfig
from groupcoord.log.lease import HeldLease, LeaseTable
from groupcoord.log.memory import InMemoryRecordLog
from groupcoord.member import GroupMember, MemberOptions
from groupcoord.member.listener import BaseRebalanceListener
from groupcoord.protocol.consumer_protocol import (
    Assignment,
    ConsumerProtocolError,
    TopicPartitions,
    decode_subscription,
    encode_assignment,
)
from groupcoord.runtime.service import CoordinatorService, wall_clock_ms
from groupcoord.runtime.writer import log_persister
from groupcoord.server.dispatcher import build_dispatcher
from groupcoord.server.endpoint import EndpointConfig
from groupcoord.state_root import StateRoot
from groupcoord.topics import TopicCatalog
from groupcoord.topics.embedded import EmbeddedTopics
from tests.server.conftest import RunningEndpoint

SESSION_TIMEOUT_MS = 1500
HEARTBEAT_INTERVAL_MS = 100
REBALANCE_TIMEOUT_MS = 3000
FAST_OPTIONS = MemberOptions(retry_backoff_ms=20, retry_backoff_max_ms=200, request_timeout_ms=5000,
                             metadata_max_age_ms=100, auto_commit_interval_ms=100)


def _owned(member: AssignmentMember, cooperative: bool) -> tuple[TopicPartitions, ...]:
    """What a member owns. Cooperative members report it themselves (KIP-429); a member that never received
    its last assignment reports nothing, so the coordinator's record of that assignment must not be trusted."""
    if not cooperative:
        return member.owned
    try:
        return decode_subscription(member.metadata).owned_partitions
    except ConsumerProtocolError:
        return ()


def balanced_assignment(effect: NeedsAssignment, partition_counts: dict[str, int], *,
                        cooperative: bool) -> CompleteAssignment:
    """A sticky, balanced assignment: members keep what they own up to their fair share, the rest is dealt out.

    Under the cooperative protocol a partition still owned by another member is withheld (KIP-429): its owner
    revokes it first, and the follow-up rebalance hands it over.
    """
    members = sorted(effect.members, key=lambda m: m.member_id)
    subscribed = {m.member_id: set(m.topics or ()) for m in members}
    partitions = sorted(TopicPartition(t, p) for t in set().union(*subscribed.values())
                        for p in range(partition_counts.get(t, 0)))
    owner = {TopicPartition(g.topic, p): m.member_id for m in members for g in _owned(m, cooperative)
             for p in g.partitions}
    base, extra = divmod(len(partitions), len(members)) if members else (0, 0)
    by_ownership = sorted(members, key=lambda m: -sum(len(g.partitions) for g in _owned(m, cooperative)))
    quota = {m.member_id: base + (1 if i < extra else 0) for i, m in enumerate(by_ownership)}
    target: dict[str, list[TopicPartition]] = {m.member_id: [] for m in members}
    for tp in partitions:  # keep owned partitions first
        member_id = owner.get(tp)
        if member_id in target and tp.topic in subscribed[member_id] and len(target[member_id]) < quota[member_id]:
            target[member_id].append(tp)
    taken = {tp for tps in target.values() for tp in tps}
    for tp in (tp for tp in partitions if tp not in taken):
        member_id = next(m for m in sorted(target, key=lambda m: len(target[m]) - quota[m])
                         if tp.topic in subscribed[m])
        target[member_id].append(tp)
    assignments = {}
    for member_id, tps in target.items():
        if cooperative:
            tps = [tp for tp in tps if owner.get(tp, member_id) == member_id]
        by_topic: dict[str, list[int]] = {}
        for tp in sorted(tps):
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        groups = tuple(TopicPartitions(t, tuple(p)) for t, p in by_topic.items())
        assignments[member_id] = encode_assignment(Assignment(partitions=groups))
    return CompleteAssignment(group_id=effect.group_id, generation_id=effect.generation_id, assignments=assignments)


@dataclass
class Observed:
    """Every core request the coordinator handled, and every response as ``(response type, error name)``."""

    requests: list[Any] = field(default_factory=list)
    responses: list[tuple[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def requests_of(self, request_type: type) -> list[Any]:
        """Every request of ``request_type`` (a ``groupcoord.protocol`` request class), in order."""
        with self.lock:
            return [r for r in self.requests if isinstance(r, request_type)]

    def errors_of(self, response_type: str) -> list[str]:
        """The error names of every response of ``response_type`` (e.g. ``"HeartbeatResponse"``)."""
        with self.lock:
            return [error for kind, error in self.responses if kind == response_type]


class RecordingCoordinator:
    """Delegates to a :class:`GroupCoordinator` and records what goes in and out (tests assert on the wire)."""

    def __init__(self, core: GroupCoordinator, observed: Observed) -> None:
        self.core = core
        self.observed = observed

    def handle(self, request: Any, now_ms: int, token: Any) -> Any:
        """Handle and record."""
        result = self.core.handle(request, now_ms, token)
        self._record(result, request)
        return result

    def advance(self, now_ms: int) -> Any:
        """Fire timers and record the responses they release."""
        result = self.core.advance(now_ms)
        self._record(result, None)
        return result

    def _record(self, result: Any, request: Any) -> None:
        with self.observed.lock:
            if request is not None:
                self.observed.requests.append(request)
            for _, response in result.responses:
                error = getattr(response, "error", None)
                self.observed.responses.append((type(response).__name__, getattr(error, "name", "")))


class SkewableClock:
    """Wall-clock milliseconds plus an offset the test can jump forward (a pause of the whole world but us)."""

    def __init__(self) -> None:
        self.offset_ms = 0

    def __call__(self) -> int:
        return wall_clock_ms() + self.offset_ms


class Coordinator:
    """The running coordinator stack of one state root; :meth:`restart` fails it over to a fresh one."""

    def __init__(self, root: StateRoot, *, cooperative: bool, min_session_timeout_ms: int = 100) -> None:
        self.root = root
        self.catalog = TopicCatalog(root)
        self.log = InMemoryRecordLog()
        self.observed = Observed()
        self.clock = SkewableClock()
        self._cooperative = cooperative
        self._config = CoordinatorConfig(initial_rebalance_delay_ms=0, min_session_timeout_ms=min_session_timeout_ms)
        self._leases = LeaseTable(root.lease_path, config=LeaseConfig(timeout_ms=600_000))
        self._lease: HeldLease | None = None
        self.running: RunningEndpoint | None = None
        self.service: CoordinatorService | None = None
        self.start()

    @property
    def bootstrap(self) -> str:
        """``host:port`` of the running endpoint."""
        assert self.running is not None
        return self.running.bootstrap

    def start(self) -> None:
        """Load the log into a fresh core, serve it on a new port, and advertise it in the lease."""
        core = GroupCoordinator(self._config)
        records, _ = split_control(r for batch in self.log.batches for r in batch)
        for record in records:
            core.replay(decode_record(record))
        coordinator = RecordingCoordinator(core, self.observed)
        service = CoordinatorService(coordinator, persist=log_persister(self.log), clock=self.clock, tick_ms=20,
                                     on_effects=lambda effects: self._assign(service, core, effects))
        embedded = EmbeddedTopics(self.root, catalog=self.catalog)
        running = RunningEndpoint(build_dispatcher(topics=embedded, service=service, topic_reader=embedded),
                                  EndpointConfig())

        async def begin() -> None:
            service.apply(core.on_loaded(self.clock()))
            await service.start()

        running.call(begin())
        self.running, self.service = running, service
        self._lease = self._leases.try_acquire("test-coordinator", running.bootstrap)
        assert self._lease is not None, "the lease was not free"

    def stop(self) -> None:
        """Release the lease and stop serving (in-flight requests get NOT_COORDINATOR; connections close)."""
        if self._lease is not None:
            self._leases.release(self._lease)
            self._lease = None
        if self.running is not None and self.service is not None:
            self.running.call(self.service.stop())
            self.running.close()
        self.running = self.service = None

    def restart(self) -> None:
        """Fail over: stop, then serve the same log from a fresh core on a new port."""
        self.stop()
        self.start()

    def _assign(self, service: CoordinatorService, core: GroupCoordinator, effects: Sequence[Any]) -> None:
        counts = self.catalog.partition_counts()

        def complete(answer: CompleteAssignment) -> None:
            service.apply(core.complete_assignment(answer, self.clock()))

        for effect in effects:
            asyncio.get_running_loop().call_soon(
                complete, balanced_assignment(effect, counts, cooperative=self._cooperative))


@pytest.fixture
def coordinator(tmp_path: Path) -> Iterator[Callable[..., Coordinator]]:
    """Start coordinators: ``coordinator({"orders": 6}, cooperative=True)`` creates the topics first."""
    started: list[Coordinator] = []

    def start(topics: dict[str, int], *, cooperative: bool = True, **config: Any) -> Coordinator:
        root = StateRoot.open(tmp_path / f"state-{len(started)}", create=True)
        catalog = TopicCatalog(root)
        for name, partitions in topics.items():
            catalog.create(name, partitions)
        stack = Coordinator(root, cooperative=cooperative, **config)
        started.append(stack)
        return stack

    yield start
    for stack in started:
        stack.stop()


class RecordingListener(BaseRebalanceListener):
    """Records every callback as ``(kind, sorted partitions)``."""

    def __init__(self) -> None:
        self.events: list[tuple[str, list[TopicPartition]]] = []

    def on_partitions_revoked(self, revoked: frozenset[TopicPartition]) -> None:
        self.events.append(("revoked", sorted(revoked)))

    def on_partitions_assigned(self, assigned: frozenset[TopicPartition]) -> None:
        self.events.append(("assigned", sorted(assigned)))

    def on_partitions_lost(self, lost: frozenset[TopicPartition]) -> None:
        self.events.append(("lost", sorted(lost)))

    def kinds(self) -> list[str]:
        """The callback kinds in order."""
        return [kind for kind, _ in self.events]


@pytest.fixture
def members() -> Iterator[Callable[..., GroupMember]]:
    """Make members with short timeouts (overridable); every member is closed after the test."""
    made: list[GroupMember] = []

    def make(group_id: str = "g", **options: Any) -> GroupMember:
        settings: dict[str, Any] = {
            "session_timeout_ms": SESSION_TIMEOUT_MS, "heartbeat_interval_ms": HEARTBEAT_INTERVAL_MS,
            "rebalance_timeout_ms": REBALANCE_TIMEOUT_MS, "options": FAST_OPTIONS, **options,
        }
        member = GroupMember(group_id, **settings)
        made.append(member)
        return member

    yield make
    for member in made:
        member.close()


@contextlib.contextmanager
def polling(members: Sequence[GroupMember]) -> Iterator[list[BaseException]]:
    """Poll every member from its own thread (a JoinGroup blocks until the whole group joined) while inside;
    yields the list of exceptions the polls raised."""
    stop = threading.Event()
    failures: list[BaseException] = []

    def loop(member: GroupMember) -> None:
        while not stop.is_set():
            try:
                member.poll(timeout_ms=200)
            except BaseException as exc:  # reported to the test thread
                failures.append(exc)
                return
            time.sleep(0.02)

    threads = [threading.Thread(target=loop, args=(m,), daemon=True) for m in members]
    for thread in threads:
        thread.start()
    try:
        yield failures
    finally:
        stop.set()
        for thread in threads:
            thread.join(REBALANCE_TIMEOUT_MS / 1000 + 5)


def poll_until(members: Sequence[GroupMember], done: Callable[[], bool], timeout_s: float = 20.0) -> None:
    """Poll every member from its own thread until ``done()``; a failed poll fails the test."""
    with polling(members) as failures:
        wait_for(lambda: bool(failures) or done(), timeout_s)
        if failures:
            raise failures[0]


def wait_for(condition: Callable[[], bool], timeout_s: float = 10.0) -> None:
    """Wait until ``condition()`` holds (without polling any member)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.02)
