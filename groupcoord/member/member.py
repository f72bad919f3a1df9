"""``GroupMember``: a consumer-group member that joins, syncs, heartbeats and commits against the coordinator.

The protocol itself (what to send, what an answer means, which partitions move) is
:class:`~groupcoord.member.protocol_machine.MemberMachine`; this class is its I/O shell: the connection to the
coordinator (found and found again by :class:`~groupcoord.member.discovery.CoordinatorLocator`), the threads, the
clock, retries with backoff, and the rebalance listener.

Threads. The application thread calls :meth:`GroupMember.poll`, which (re)joins when needed and runs every
rebalance-listener callback. A background thread sends heartbeats while the member is stable; what it learns (rejoin
needed, generation lost, coordinator gone, fenced) is recorded in the machine for the next ``poll`` to act on.
Calls into the machine are serialised by one lock; requests are sent outside it.

Errors are handled as Kafka's clients do:

- NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS or a lost connection: forget the
  coordinator, rediscover it with backoff, and keep the assignment meanwhile (seed 000);
- UNKNOWN_MEMBER_ID: reset the member id, the partitions are lost, rejoin;
- ILLEGAL_GENERATION: the generation is lost (the member id is kept), the partitions are lost, rejoin;
- REBALANCE_IN_PROGRESS: rejoin (keeping the partitions under the cooperative protocol);
- MEMBER_ID_REQUIRED: rejoin at once with the member id the coordinator gave;
- FENCED_INSTANCE_ID: fatal; every later call raises :class:`FencedInstanceIdError`.
"""

from __future__ import annotations

import enum
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import NoReturn, TypedDict

from kafka.structs import OffsetAndMetadata, TopicPartition

from groupcoord.member.backoff import Backoff
from groupcoord.member.config import DEFAULT_ASSIGNORS, MemberConfig, MemberOptions, parse_bootstrap
from groupcoord.member.discovery import CoordinatorLocator, bootstrap_candidates, lease_candidates
from groupcoord.member.errors import (
    CommitFailedError,
    CoordinatorRequestError,
    CoordinatorUnavailableError,
    FencedInstanceIdError,
    GroupMemberError,
    MemberClosedError,
)
from groupcoord.member.generation import Generation
from groupcoord.member.heartbeat import HeartbeatTiming, monotonic_ms
from groupcoord.member.leader_assignment import assign_as_leader
from groupcoord.member.listener import BaseRebalanceListener, RebalanceListener
from groupcoord.member.protocol_machine import (
    COORDINATOR_ERRORS,
    AssignAsLeader,
    CommitBeforeRevoke,
    CommitCompleted,
    CommitOutcome,
    CoordinatorLost,
    MachineConfig,
    MemberFailed,
    MemberMachine,
    Output,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
    Phase,
    Send,
)
from groupcoord.member.subscription import PartitionCounts, catalog_partition_counts, matching_topics
from groupcoord.member.wire import GroupClient
from groupcoord.protocol.errors import Errors
from groupcoord.state_root import StateRoot

log = logging.getLogger("groupcoord.member")

_IDLE_WAIT_S = 0.05


class MemberState(enum.Enum):
    """Where the member is in the group protocol."""

    UNJOINED = "unjoined"
    REBALANCING = "rebalancing"
    STABLE = "stable"


_STATE_OF_PHASE = {Phase.JOINING: MemberState.REBALANCING, Phase.ASSIGNING: MemberState.REBALANCING,
                   Phase.SYNCING: MemberState.REBALANCING, Phase.STABLE: MemberState.STABLE}

Offsets = Mapping[TopicPartition, "int | OffsetAndMetadata"]


def _normalized(offsets: Offsets) -> dict[TopicPartition, OffsetAndMetadata]:
    return {tp: o if isinstance(o, OffsetAndMetadata) else OffsetAndMetadata(int(o), "", -1)
            for tp, o in offsets.items()}


class GroupMemberSettings(TypedDict, total=False):
    """:class:`GroupMember`'s keyword-only settings, for callers that pass them on (``run_members``, the
    ingestion job); the meaning of each is in :class:`GroupMember`."""

    pattern: str | re.Pattern[str] | None
    bootstrap_servers: str | Sequence[str] | None
    state_root: str | Path | StateRoot | None
    group_instance_id: str | None
    session_timeout_ms: int
    heartbeat_interval_ms: int
    rebalance_timeout_ms: int
    assignors: Sequence[str]
    enable_auto_commit: bool
    listener: RebalanceListener | None
    options: MemberOptions | None


class GroupMember:
    """A member of consumer group ``group_id`` (see the module docstring for threads and error handling).

    Pass exactly one of ``topics`` or ``pattern`` and exactly one of ``bootstrap_servers`` or ``state_root`` (the
    coordinator is then found through the lease table). The protocol is cooperative (KIP-429) when every assignor
    named supports it (``server-cooperative-sticky``, ``cooperative-sticky``), else eager. ``options`` holds the
    ``spark.groupcoord.member.*`` settings (backoffs, request timeout, pattern refresh, auto-commit interval).
    """

    def __init__(
        self,
        group_id: str,
        *,
        topics: Sequence[str] | None = None,
        pattern: str | re.Pattern[str] | None = None,
        bootstrap_servers: str | Sequence[str] | None = None,
        state_root: str | Path | StateRoot | None = None,
        group_instance_id: str | None = None,
        session_timeout_ms: int = 45000,
        heartbeat_interval_ms: int = 3000,
        rebalance_timeout_ms: int = 300000,
        assignors: Sequence[str] = DEFAULT_ASSIGNORS,
        enable_auto_commit: bool = False,
        listener: RebalanceListener | None = None,
        options: MemberOptions | None = None,
    ) -> None:
        if isinstance(topics, str):
            raise ValueError("GroupMember: topics must be a list of topic names, not a string")
        options = options or MemberOptions.from_config()
        timing = HeartbeatTiming(session_timeout_ms=session_timeout_ms, heartbeat_interval_ms=heartbeat_interval_ms,
                                 rebalance_timeout_ms=rebalance_timeout_ms, retry_backoff_ms=options.retry_backoff_ms)
        self.config = MemberConfig(
            group_id=group_id,
            topics=tuple(topics) if topics is not None else None,
            pattern=re.compile(pattern) if isinstance(pattern, str) else pattern,
            bootstrap_servers=parse_bootstrap(bootstrap_servers) if bootstrap_servers is not None else None,
            state_root=_root(state_root),
            group_instance_id=group_instance_id, timing=timing, assignors=tuple(assignors),
            enable_auto_commit=enable_auto_commit, options=options,
        )
        self._listener: RebalanceListener = listener or BaseRebalanceListener()
        if self.config.state_root is not None:
            self._locator = CoordinatorLocator(group_id, lease_candidates(self.config.state_root), options)
            self._catalog_counts: PartitionCounts | None = catalog_partition_counts(self.config.state_root)
        else:
            assert self.config.bootstrap_servers is not None
            self._locator = CoordinatorLocator(group_id, bootstrap_candidates(self.config.bootstrap_servers),
                                               options)
            self._catalog_counts = None
        self._machine = MemberMachine(MachineConfig(
            group_id=group_id, timing=timing, protocols=self.config.assignors, topics=self.config.topics or (),
            cooperative=self.config.cooperative, group_instance_id=group_instance_id,
            auto_commit_interval_ms=options.auto_commit_interval_ms if enable_auto_commit else None),
            clock=monotonic_ms)
        self._lock = threading.RLock()  # guards the machine, which the heartbeat and commit threads share
        self._discovery_lock = threading.Lock()
        self._client: GroupClient | None = None
        self._fatal: GroupMemberError | None = None
        self._closed = False
        self._next_topic_check_ms = 0.0
        self._join_backoff = Backoff(options.retry_backoff_ms, options.retry_backoff_max_ms)
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._commit_pool: ThreadPoolExecutor | None = None

    # --- state the application may read ------------------------------------------------------------------------
    @property
    def group_id(self) -> str:
        """The group's id."""
        return self.config.group_id

    @property
    def generation(self) -> Generation:
        """The generation this member is in (``generation_id == -1`` when none)."""
        with self._lock:
            return self._machine.generation

    @property
    def member_id(self) -> str:
        """This member's id (empty before the first join)."""
        return self.generation.member_id

    @property
    def state(self) -> MemberState:
        """Unjoined, rebalancing or stable."""
        with self._lock:
            return _STATE_OF_PHASE.get(self._machine.phase, MemberState.UNJOINED)

    @property
    def cooperative(self) -> bool:
        """True under the cooperative (KIP-429) protocol."""
        return self.config.cooperative

    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions this member owns now."""
        with self._lock:
            return self._machine.owned

    def subscription(self) -> tuple[str, ...]:
        """The topics this member subscribes to (a pattern's current matches)."""
        with self._lock:
            return self._machine.topics

    # --- the poll loop -----------------------------------------------------------------------------------------
    def poll(self, timeout_ms: int = 1000) -> frozenset[TopicPartition]:
        """Join or rejoin when needed, run the listener's callbacks, auto-commit when due; return the assignment.

        Returns as soon as the member is stable; while the coordinator cannot be reached it keeps trying (with
        backoff) for up to ``timeout_ms`` and returns the assignment it still holds. A JoinGroup parked by the
        coordinator may block for up to the rebalance timeout, as in Kafka.
        """
        self._check_usable()
        self._start_heartbeat_thread()
        deadline = monotonic_ms() + timeout_ms
        self._maybe_refresh_pattern()
        self._ensure_active_group(deadline)
        with self._lock:
            due = self._machine.auto_commit_due()
        self._commit_quietly(due)
        return self.assignment()

    def _ensure_active_group(self, deadline_ms: float) -> None:
        while True:
            self._check_usable()
            with self._lock:
                outputs = self._machine.poll()
            if not outputs:
                return  # stable (or nothing to do until an answer comes)
            try:
                self._run(outputs)
            except CoordinatorUnavailableError as exc:
                log.info("group %s: coordinator unavailable (%s); rediscovering", self.group_id, exc)
                self._coordinator_dead()
                delay = self._join_backoff.next_ms()
            else:
                with self._lock:
                    joined = self._machine.phase is Phase.STABLE
                if joined:
                    self._join_backoff.reset()
                if joined or not any(isinstance(o, Send) for o in outputs):
                    continue  # joined, or revoked before the join: go on at once
                delay = 0.0  # the coordinator asked for another round (member id, lost generation, rebalance)
            remaining = deadline_ms - monotonic_ms()
            if remaining <= 0:
                return
            if delay:
                time.sleep(min(delay, remaining) / 1000)

    def _run(self, outputs: Iterable[Output]) -> None:
        """Carry out the machine's outputs in order, on the application thread."""
        for output in outputs:
            if isinstance(output, Send):
                self._run(self._exchange(output))
            elif isinstance(output, AssignAsLeader):
                assignments = assign_as_leader(output.protocol, output.members, self._partition_counts(None))
                with self._lock:
                    sync = self._machine.assigned(assignments)
                self._run(sync)
            elif isinstance(output, CommitBeforeRevoke):
                self._commit_quietly(output.offsets)
            elif isinstance(output, PartitionsRevoked):
                self._listener.on_partitions_revoked(output.partitions)
            elif isinstance(output, PartitionsLost):
                self._listener.on_partitions_lost(output.partitions)
            elif isinstance(output, PartitionsAssigned):
                self._wake.set()
                self._listener.on_partitions_assigned(output.added)
            else:
                self._react(output)

    def _react(self, output: Output) -> None:
        """What any thread does with a lost coordinator or a fatal error."""
        if isinstance(output, CoordinatorLost):
            self._coordinator_dead()
            raise CoordinatorUnavailableError(output.reason)
        if isinstance(output, MemberFailed):
            if output.error is Errors.FENCED_INSTANCE_ID:
                self._fail(FencedInstanceIdError(self.group_id, self.config.group_instance_id))
            self._fail(CoordinatorRequestError(output.error, output.what))

    def _exchange(self, send: Send) -> list[Output]:
        """Send one request to the coordinator and feed the answer (or the lost connection) to the machine."""
        timeout_ms = self.config.timing.rebalance_timeout_ms + self.config.options.request_timeout_ms
        try:
            response = self._ensure_coordinator().call(send.request, timeout_ms=timeout_ms)
        except CoordinatorUnavailableError as exc:
            log.info("group %s: %s not answered: %s", self.group_id, type(send.request).__name__, exc)
            with self._lock:
                return self._machine.on_request_failed(send.request_id)
        with self._lock:
            return self._machine.on_response(send.request_id, response)

    def request_rejoin(self, reason: str = "requested by the application") -> None:
        """Rejoin at the next :meth:`poll` (e.g. after the subscription changed)."""
        with self._lock:
            self._machine.request_rejoin(reason)

    def _fail(self, error: GroupMemberError) -> NoReturn:
        with self._lock:
            if self._fatal is None:
                self._fatal = error
                log.error("group %s: %s", self.group_id, error)
        self._stop.set()
        raise error

    def _check_usable(self) -> None:
        if self._fatal is not None:
            raise self._fatal
        with self._lock:
            failure = self._machine.failure
        if failure is not None:
            # Another thread fed the machine the fatal answer (a Heartbeat's FENCED_INSTANCE_ID) and has not yet
            # raised it: this call must not go on as if the member were still in the group.
            self._react(failure)
        if self._closed:
            raise MemberClosedError(f"group {self.group_id}: the member is closed")

    # --- coordinator -------------------------------------------------------------------------------------------
    def _ensure_coordinator(self) -> GroupClient:
        with self._discovery_lock:
            with self._lock:
                client = self._client
            if client is not None and client.connection.connected:
                return client
            client = self._locator.locate()
            with self._lock:
                self._client = client
            return client

    def _coordinator_dead(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.connection.close()

    def _partition_counts(self, client: GroupClient | None) -> Mapping[str, int]:
        """Topics and partition counts: the catalog's with a state root, else the coordinator's Metadata."""
        if self._catalog_counts is not None:
            return self._catalog_counts()
        if client is None:
            client = self._ensure_coordinator()
        return client.topic_partition_counts()

    def _maybe_refresh_pattern(self) -> None:
        pattern = self.config.pattern
        if pattern is None or monotonic_ms() < self._next_topic_check_ms:
            return
        self._next_topic_check_ms = monotonic_ms() + self.config.options.metadata_max_age_ms
        try:
            names: Iterable[str] = self._partition_counts(None)
        except (CoordinatorUnavailableError, OSError) as exc:
            log.info("group %s: cannot list topics for %r: %s", self.group_id, pattern.pattern, exc)
            return
        matched = matching_topics(pattern, names)
        with self._lock:
            if matched != self._machine.topics:
                log.info("group %s: pattern %r now matches %s", self.group_id, pattern.pattern, list(matched))
                self._machine.subscribe(matched)

    # --- heartbeats --------------------------------------------------------------------------------------------
    def _start_heartbeat_thread(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._heartbeat_loop, daemon=True,
                                            name=f"groupcoord-heartbeat-{self.group_id}")
            self._thread.start()

    def _heartbeat_loop(self) -> None:
        backoff = Backoff(self.config.options.retry_backoff_ms, self.config.options.retry_backoff_max_ms)
        while not self._stop.is_set():
            wait_ms = self._heartbeat_once(backoff)
            self._wake.wait(wait_ms / 1000)
            self._wake.clear()

    def _heartbeat_once(self, backoff: Backoff) -> float:
        """One step of the heartbeat thread; returns how long to wait before the next."""
        with self._lock:
            usable = self._fatal is None and not self._closed
            outputs = self._machine.on_time() if usable else []
            wait = self._machine.time_to_next_heartbeat_ms()
        if not outputs:
            return wait if wait is not None and wait > 0 else _IDLE_WAIT_S * 1000
        # Only a Heartbeat or a poll-timeout LeaveGroup goes out here; what the answer means is recorded in the
        # machine for the application thread's next poll.
        reactions = [reaction for send in outputs if isinstance(send, Send) for reaction in self._exchange(send)]
        try:
            for reaction in reactions:
                self._react(reaction)
        except CoordinatorUnavailableError as exc:
            log.info("group %s: heartbeat failed (%s); rediscovering the coordinator", self.group_id, exc)
            return backoff.next_ms()
        except GroupMemberError:
            return _IDLE_WAIT_S * 1000
        backoff.reset()
        with self._lock:
            wait = self._machine.time_to_next_heartbeat_ms()
        return wait if wait is not None else _IDLE_WAIT_S * 1000

    # --- offsets -----------------------------------------------------------------------------------------------
    def mark_processed(self, offsets: Offsets) -> None:
        """Record the next offsets to commit (auto commit commits them every ``member.auto.commit.interval.ms``,
        before partitions are revoked and on close; ``commit_sync()`` without arguments commits them too)."""
        with self._lock:
            self._machine.mark_processed(_normalized(offsets))

    def commit_sync(self, offsets: Offsets | None = None, *, timeout_ms: int | None = None) -> None:
        """Commit ``offsets`` (default: those marked processed) in this member's generation; waits for durability.

        Retries through coordinator failover until ``timeout_ms`` (default ``member.request.timeout.ms``). Raises
        :class:`CommitFailedError` when the group rebalanced or this member's generation is over.
        """
        self._check_usable()
        with self._lock:
            committing = _normalized(offsets) if offsets is not None else dict(self._machine.processed)
        if not committing:
            return
        deadline = monotonic_ms() + (timeout_ms if timeout_ms is not None else self.config.options.request_timeout_ms)
        backoff = Backoff(self.config.options.retry_backoff_ms, self.config.options.retry_backoff_max_ms)
        while True:
            with self._lock:
                generation = self._machine.commit_generation()
                send = self._machine.commit(committing)
            outputs = self._exchange(send)
            done = next((o for o in outputs if isinstance(o, CommitCompleted)), None)
            try:
                for output in outputs:
                    self._react(output)
            except CoordinatorUnavailableError as exc:
                if monotonic_ms() >= deadline:
                    raise CommitFailedError(f"group {self.group_id}: commit timed out: {exc}") from None
                time.sleep(min(backoff.next_ms(), max(deadline - monotonic_ms(), 0)) / 1000)
                continue
            if done is not None and done.outcome is CommitOutcome.COMMITTED:
                return
            raise CommitFailedError(
                f"group {self.group_id}: commit failed: the group rebalanced or generation "
                f"{generation.generation_id} is over; poll() to rejoin, then commit again")

    def commit_async(self, offsets: Offsets | None = None,
                     callback: Callable[[Mapping[TopicPartition, OffsetAndMetadata], BaseException | None], None]
                     | None = None) -> Future[None]:
        """Commit in the background; the future fails as :meth:`commit_sync` would. ``callback(offsets, error)``
        runs when it is done (on the commit thread)."""
        self._check_usable()
        with self._lock:
            committing = _normalized(offsets) if offsets is not None else dict(self._machine.processed)
            if self._commit_pool is None:
                self._commit_pool = ThreadPoolExecutor(max_workers=1,
                                                       thread_name_prefix=f"groupcoord-commit-{self.group_id}")
        future = self._commit_pool.submit(self.commit_sync, committing)
        if callback is not None:
            future.add_done_callback(lambda f: callback(committing, f.exception()))
        return future

    def committed(self, partitions: Iterable[TopicPartition], *,
                  timeout_ms: int | None = None) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed offsets of ``partitions`` (``None`` where nothing is committed)."""
        self._check_usable()
        wanted = sorted(set(partitions))
        deadline = monotonic_ms() + (timeout_ms if timeout_ms is not None else self.config.options.request_timeout_ms)
        backoff = Backoff(self.config.options.retry_backoff_ms, self.config.options.retry_backoff_max_ms)
        while True:
            try:
                fetched = self._ensure_coordinator().offset_fetch(group_id=self.group_id, partitions=wanted)
                if fetched.error in COORDINATOR_ERRORS:
                    raise CoordinatorUnavailableError(f"OffsetFetch: {fetched.error.name}")
                if fetched.error is not Errors.NONE:
                    raise CoordinatorRequestError(fetched.error, f"OffsetFetch for group {self.group_id}")
                offsets = {TopicPartition(t.name, p.partition): None if p.offset < 0 else OffsetAndMetadata(
                    p.offset, p.metadata, p.leader_epoch) for t in fetched.topics for p in t.partitions}
                return {tp: offsets.get(tp) for tp in wanted}
            except CoordinatorUnavailableError:
                self._coordinator_dead()
                if monotonic_ms() >= deadline:
                    raise
                time.sleep(min(backoff.next_ms(), max(deadline - monotonic_ms(), 0)) / 1000)

    def _commit_quietly(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        """Auto commit: commit ``offsets``, and only log a failure."""
        if not offsets:
            return
        try:
            self.commit_sync(offsets)
        except (CommitFailedError, CoordinatorRequestError, CoordinatorUnavailableError) as exc:
            log.warning("group %s: auto commit failed: %s", self.group_id, exc)

    # --- leaving -----------------------------------------------------------------------------------------------
    def close(self) -> None:
        """Commit (with auto commit), revoke the owned partitions, leave the group, stop the heartbeat thread.

        Static members leave too (LeaveGroup names their instance id), so a clean shutdown rebalances at once.
        """
        if self._closed:
            return
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=self.config.options.request_timeout_ms / 1000)
        try:
            if self._fatal is None:
                with self._lock:
                    outputs = self._machine.leave("the member is closing")
                while outputs:
                    self._leave_step(outputs)
                    with self._lock:
                        outputs = self._machine.leave("the member is closing")
        finally:
            self._closed = True
            self._coordinator_dead()
            if self._commit_pool is not None:
                self._commit_pool.shutdown(wait=True)

    def _leave_step(self, outputs: list[Output]) -> None:
        """Run the revocation, or send the LeaveGroup (a coordinator out of reach does not stop the close)."""
        try:
            self._run(outputs)
        except CoordinatorUnavailableError as exc:
            log.info("group %s: LeaveGroup not delivered: %s", self.group_id, exc)

    def __enter__(self) -> GroupMember:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def _root(state_root: str | Path | StateRoot | None) -> Path | StateRoot | None:
    """A local state root as a path; a URI (``s3://``) opened, with the storage settings of the environment."""
    if state_root is None or isinstance(state_root, StateRoot):
        return state_root
    return StateRoot.open(state_root) if "://" in str(state_root) else Path(state_root)
