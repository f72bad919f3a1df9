"""``GroupMember``: a consumer-group member that joins, syncs, heartbeats and commits against the coordinator.

Threads. The application thread calls :meth:`GroupMember.poll`, which (re)joins when needed and runs every
rebalance-listener callback. A background thread sends heartbeats while the member is stable; it only records what
it learns (rejoin needed, generation lost, coordinator gone, fenced) for the next ``poll`` to act on, except that
it rediscovers a lost coordinator itself so the session stays alive between polls.

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

import contextlib
import enum
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import NoReturn

from kafka.structs import OffsetAndMetadata, TopicPartition

from groupcoord.group.group import is_server_side
from groupcoord.member.backoff import Backoff
from groupcoord.member.config import MemberConfig, MemberOptions, parse_bootstrap
from groupcoord.member.discovery import CoordinatorLocator, bootstrap_candidates, lease_candidates
from groupcoord.member.errors import (
    CommitFailedError,
    CoordinatorRequestError,
    CoordinatorUnavailableError,
    FencedInstanceIdError,
    GroupMemberError,
    MemberClosedError,
)
from groupcoord.member.generation import NO_GENERATION, UNKNOWN_MEMBER_ID, Generation
from groupcoord.member.heartbeat import HeartbeatTimer, HeartbeatTiming, monotonic_ms
from groupcoord.member.leader_assignment import assign_as_leader
from groupcoord.member.listener import BaseRebalanceListener, RebalanceListener
from groupcoord.member.subscription import (
    PartitionCounts,
    assigned_partitions,
    catalog_partition_counts,
    matching_topics,
    subscription_metadata,
)
from groupcoord.member.wire import GroupClient
from groupcoord.protocol.errors import ErrorCode, Errors

log = logging.getLogger("groupcoord.member")

_COORDINATOR_ERRORS = (Errors.NOT_COORDINATOR, Errors.COORDINATOR_NOT_AVAILABLE, Errors.COORDINATOR_LOAD_IN_PROGRESS)
_IDLE_WAIT_S = 0.05


class MemberState(enum.Enum):
    """Where the member is in the group protocol."""

    UNJOINED = "unjoined"
    REBALANCING = "rebalancing"
    STABLE = "stable"


class _RetryJoin(Exception):
    """The coordinator asked for a (re)join; the join loop retries."""


Offsets = Mapping[TopicPartition, "int | OffsetAndMetadata"]


def _normalized(offsets: Offsets) -> dict[TopicPartition, OffsetAndMetadata]:
    return {tp: o if isinstance(o, OffsetAndMetadata) else OffsetAndMetadata(int(o), "", -1)
            for tp, o in offsets.items()}


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
        state_root: str | Path | None = None,
        group_instance_id: str | None = None,
        session_timeout_ms: int = 45000,
        heartbeat_interval_ms: int = 3000,
        rebalance_timeout_ms: int = 300000,
        assignors: Sequence[str] = ("server-cooperative-sticky",),
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
            state_root=Path(state_root) if state_root is not None else None,
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
        self._lock = threading.RLock()
        self._discovery_lock = threading.Lock()
        self._client: GroupClient | None = None
        self._generation = NO_GENERATION
        self._state = MemberState.UNJOINED
        self._owned: frozenset[TopicPartition] = frozenset()
        self._rejoin_needed = True
        self._rejoin_reason = "first join"
        self._pending_lost = False
        self._fatal: GroupMemberError | None = None
        self._closed = False
        self._subscribed: tuple[str, ...] = tuple(sorted(set(self.config.topics or ())))
        self._next_topic_check_ms = 0.0
        self._processed: dict[TopicPartition, OffsetAndMetadata] = {}
        self._next_auto_commit_ms = monotonic_ms() + options.auto_commit_interval_ms
        self._timer = HeartbeatTimer(timing)
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
            return self._generation

    @property
    def member_id(self) -> str:
        """This member's id (empty before the first join)."""
        return self.generation.member_id

    @property
    def state(self) -> MemberState:
        """Unjoined, rebalancing or stable."""
        with self._lock:
            return self._state

    @property
    def cooperative(self) -> bool:
        """True under the cooperative (KIP-429) protocol."""
        return self.config.cooperative

    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions this member owns now."""
        with self._lock:
            return self._owned

    def subscription(self) -> tuple[str, ...]:
        """The topics this member subscribes to (a pattern's current matches)."""
        with self._lock:
            return self._subscribed

    # --- the poll loop -----------------------------------------------------------------------------------------
    def poll(self, timeout_ms: int = 1000) -> frozenset[TopicPartition]:
        """Join or rejoin when needed, run the listener's callbacks, auto-commit when due; return the assignment.

        Returns as soon as the member is stable; while the coordinator cannot be reached it keeps trying (with
        backoff) for up to ``timeout_ms`` and returns the assignment it still holds. A JoinGroup parked by the
        coordinator may block for up to the rebalance timeout, as in Kafka.
        """
        self._check_usable()
        self._start_heartbeat_thread()
        self._timer.poll()
        deadline = monotonic_ms() + timeout_ms
        self._maybe_refresh_pattern()
        self._ensure_active_group(deadline)
        self._maybe_auto_commit()
        return self.assignment()

    def _ensure_active_group(self, deadline_ms: float) -> None:
        while True:
            self._check_usable()
            self._invoke_lost_if_pending()
            with self._lock:
                if not self._rejoin_needed and self._state is MemberState.STABLE:
                    return
            try:
                self._join_once(self._ensure_coordinator())
                self._join_backoff.reset()
                continue
            except _RetryJoin:
                delay = 0.0
            except CoordinatorUnavailableError as exc:
                log.info("group %s: coordinator unavailable (%s); rediscovering", self.group_id, exc)
                self._coordinator_dead()
                delay = self._join_backoff.next_ms()
            remaining = deadline_ms - monotonic_ms()
            if remaining <= 0:
                return
            if delay:
                time.sleep(min(delay, remaining) / 1000)

    def _join_once(self, client: GroupClient) -> None:
        self._prepare_join()
        with self._lock:
            generation, owned, topics = self._generation, self._owned, self._subscribed
            reason = self._rejoin_reason
            self._state = MemberState.REBALANCING
            self._rejoin_needed = False
        metadata = subscription_metadata(topics, owned if self.cooperative else (), generation.generation_id)
        timing = self.config.timing
        log.info("group %s: joining as %r (%s)", self.group_id, generation.member_id, reason)
        joined = client.join_group(
            group_id=self.group_id, member_id=generation.member_id,
            group_instance_id=self.config.group_instance_id, session_timeout_ms=timing.session_timeout_ms,
            rebalance_timeout_ms=timing.rebalance_timeout_ms,
            protocols=[(name, metadata) for name in self.config.assignors], reason=reason)
        if joined.error is Errors.MEMBER_ID_REQUIRED:
            log.info("group %s: the coordinator gave member id %s; joining with it", self.group_id, joined.member_id)
            with self._lock:
                self._generation = Generation(generation.generation_id, joined.member_id, generation.protocol)
                self._rejoin_needed, self._rejoin_reason = True, "member id required"
            raise _RetryJoin()
        if joined.error is not Errors.NONE:
            self._on_error(joined.error, "JoinGroup", generation)
        new_generation = Generation(joined.generation_id, joined.member_id, joined.protocol_name)
        with self._lock:
            self._generation = new_generation
        assignments: dict[str, bytes] = {}
        if (joined.leader == joined.member_id and not joined.skip_assignment
                and not is_server_side(joined.protocol_name)):
            assignments = assign_as_leader(joined.protocol_name or "", joined.members, self._partition_counts(client))
        synced = client.sync_group(
            group_id=self.group_id, generation_id=new_generation.generation_id, member_id=new_generation.member_id,
            group_instance_id=self.config.group_instance_id, protocol_name=new_generation.protocol,
            assignments=assignments, timeout_ms=timing.rebalance_timeout_ms + self.config.options.request_timeout_ms)
        if synced.error is not Errors.NONE:
            self._on_error(synced.error, "SyncGroup", new_generation)
        self._complete_join(new_generation, assigned_partitions(synced.assignment))

    def _prepare_join(self) -> None:
        """Before JoinGroup: eager members give up everything; everyone gives up topics no longer subscribed."""
        with self._lock:
            owned, subscribed = self._owned, set(self._subscribed)
        revoked = owned if not self.cooperative else frozenset(tp for tp in owned if tp.topic not in subscribed)
        if revoked:
            self._revoke(revoked)

    def _complete_join(self, generation: Generation, assigned: frozenset[TopicPartition]) -> None:
        with self._lock:
            owned = self._owned
        revoked = owned - assigned
        if revoked:  # cooperative only: an eager member owns nothing by now
            self._revoke(revoked)
        added = assigned - (owned - revoked)
        with self._lock:
            self._owned = assigned
            self._state = MemberState.STABLE
            if revoked:
                # KIP-429: partitions given up in this round are handed over by the next one.
                self._rejoin_needed, self._rejoin_reason = True, f"revoked {len(revoked)} partition(s)"
        self._timer.reset_timeouts()
        self._wake.set()
        log.info("group %s: generation %d, member %s owns %d partition(s)", self.group_id,
                 generation.generation_id, generation.member_id, len(assigned))
        self._listener.on_partitions_assigned(frozenset(added))

    def _revoke(self, revoked: frozenset[TopicPartition]) -> None:
        if self.config.enable_auto_commit:
            self._commit_processed_quietly(revoked)
        with self._lock:
            self._owned = self._owned - revoked
            for tp in revoked:
                self._processed.pop(tp, None)
        log.info("group %s: revoking %s", self.group_id, sorted(revoked))
        self._listener.on_partitions_revoked(frozenset(revoked))

    def _invoke_lost_if_pending(self) -> None:
        with self._lock:
            if not self._pending_lost:
                return
            lost, self._owned, self._pending_lost = self._owned, frozenset(), False
            for tp in lost:
                self._processed.pop(tp, None)
        if lost:
            log.warning("group %s: lost %s", self.group_id, sorted(lost))
            self._listener.on_partitions_lost(lost)

    # --- errors ------------------------------------------------------------------------------------------------
    def _on_error(self, error: ErrorCode, what: str, generation: Generation) -> NoReturn:
        """React to a group error of a request sent in ``generation``; always raises."""
        if error in _COORDINATOR_ERRORS:
            self._coordinator_dead()
            raise CoordinatorUnavailableError(f"{what}: {error.name}")
        with self._lock:
            current = self._generation == generation
        if error is Errors.FENCED_INSTANCE_ID:
            self._fail(FencedInstanceIdError(self.group_id, self.config.group_instance_id))
        if error is Errors.UNKNOWN_MEMBER_ID:
            if current:
                self._reset_generation(f"{what}: {error.name}", keep_member_id=False)
            raise _RetryJoin()
        if error is Errors.ILLEGAL_GENERATION:
            if current:
                self._reset_generation(f"{what}: {error.name}", keep_member_id=True)
            raise _RetryJoin()
        if error is Errors.REBALANCE_IN_PROGRESS:
            if current:
                self.request_rejoin(f"{what}: {error.name}")
            raise _RetryJoin()
        self._fail(CoordinatorRequestError(error, f"{what} for group {self.group_id}"))

    def _reset_generation(self, reason: str, *, keep_member_id: bool) -> None:
        with self._lock:
            log.info("group %s: generation %d is lost (%s)", self.group_id, self._generation.generation_id, reason)
            self._generation = self._generation.lost() if keep_member_id else NO_GENERATION
            self._state = MemberState.UNJOINED
            self._pending_lost = bool(self._owned)
            self._rejoin_needed, self._rejoin_reason = True, reason

    def request_rejoin(self, reason: str = "requested by the application") -> None:
        """Rejoin at the next :meth:`poll` (e.g. after the subscription changed)."""
        with self._lock:
            self._rejoin_needed, self._rejoin_reason = True, reason

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
            if matched != self._subscribed:
                log.info("group %s: pattern %r now matches %s", self.group_id, pattern.pattern, list(matched))
                self._subscribed = matched
                self._rejoin_needed, self._rejoin_reason = True, "subscribed topics changed"

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
            stable = self._state is MemberState.STABLE and self._fatal is None and not self._closed
            generation = self._generation
        if not stable:
            return _IDLE_WAIT_S * 1000
        if self._timer.poll_timeout_expired():
            self._on_poll_timeout()
            return _IDLE_WAIT_S * 1000
        wait = self._timer.time_to_next_heartbeat_ms()
        if wait > 0:
            return wait
        try:
            client = self._ensure_coordinator()
            self._timer.sent_heartbeat()
            error = client.heartbeat(group_id=self.group_id, generation_id=generation.generation_id,
                                     member_id=generation.member_id,
                                     group_instance_id=self.config.group_instance_id)
        except CoordinatorUnavailableError as exc:
            log.info("group %s: heartbeat failed (%s); rediscovering the coordinator", self.group_id, exc)
            self._coordinator_dead()
            self._timer.fail_heartbeat()
            return backoff.next_ms()
        backoff.reset()
        if error is Errors.NONE:
            self._timer.received_heartbeat()
            return self._timer.time_to_next_heartbeat_ms()
        # The error is recorded for the application thread; its next poll acts on it.
        with contextlib.suppress(_RetryJoin, CoordinatorUnavailableError, GroupMemberError):
            self._on_error(error, "Heartbeat", generation)
        return _IDLE_WAIT_S * 1000

    def _on_poll_timeout(self) -> None:
        """The application stopped polling for a whole rebalance timeout: give the partitions back."""
        reason = "poll() was not called within the rebalance timeout"
        log.warning("group %s: %s; leaving the group", self.group_id, reason)
        if self.config.group_instance_id is None:
            self._leave_group(reason)
            self._reset_generation(reason, keep_member_id=False)
        else:
            self.request_rejoin(reason)
            with self._lock:
                self._state = MemberState.UNJOINED

    # --- offsets -----------------------------------------------------------------------------------------------
    def mark_processed(self, offsets: Offsets) -> None:
        """Record the next offsets to commit (auto commit commits them every ``member.auto.commit.interval.ms``,
        before partitions are revoked and on close; ``commit_sync()`` without arguments commits them too)."""
        with self._lock:
            self._processed.update(_normalized(offsets))

    def commit_sync(self, offsets: Offsets | None = None, *, timeout_ms: int | None = None) -> None:
        """Commit ``offsets`` (default: those marked processed) in this member's generation; waits for durability.

        Retries through coordinator failover until ``timeout_ms`` (default ``member.request.timeout.ms``). Raises
        :class:`CommitFailedError` when the group rebalanced or this member's generation is over.
        """
        self._check_usable()
        with self._lock:
            committing = _normalized(offsets) if offsets is not None else dict(self._processed)
        if not committing:
            return
        deadline = monotonic_ms() + (timeout_ms if timeout_ms is not None else self.config.options.request_timeout_ms)
        backoff = Backoff(self.config.options.retry_backoff_ms, self.config.options.retry_backoff_max_ms)
        while True:
            with self._lock:
                generation = self._generation if self._state is MemberState.STABLE else NO_GENERATION
            try:
                errors = self._ensure_coordinator().offset_commit(
                    group_id=self.group_id, generation_id=generation.generation_id,
                    member_id=generation.member_id or UNKNOWN_MEMBER_ID,
                    group_instance_id=self.config.group_instance_id if generation.is_valid else None,
                    offsets=committing)
                error = next((e for e in errors.values() if e is not Errors.NONE), Errors.NONE)
                if error is Errors.NONE:
                    return
                self._on_error(error, "OffsetCommit", generation)
            except CoordinatorUnavailableError as exc:
                self._coordinator_dead()
                if monotonic_ms() >= deadline:
                    raise CommitFailedError(f"group {self.group_id}: commit timed out: {exc}") from None
                time.sleep(min(backoff.next_ms(), max(deadline - monotonic_ms(), 0)) / 1000)
            except _RetryJoin:
                raise CommitFailedError(
                    f"group {self.group_id}: commit failed: the group rebalanced or generation "
                    f"{generation.generation_id} is over; poll() to rejoin, then commit again") from None

    def commit_async(self, offsets: Offsets | None = None,
                     callback: Callable[[Mapping[TopicPartition, OffsetAndMetadata], BaseException | None], None]
                     | None = None) -> Future[None]:
        """Commit in the background; the future fails as :meth:`commit_sync` would. ``callback(offsets, error)``
        runs when it is done (on the commit thread)."""
        self._check_usable()
        with self._lock:
            committing = _normalized(offsets) if offsets is not None else dict(self._processed)
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
                if fetched.error in _COORDINATOR_ERRORS:
                    raise CoordinatorUnavailableError(f"OffsetFetch: {fetched.error.name}")
                if fetched.error is not Errors.NONE:
                    raise CoordinatorRequestError(fetched.error, f"OffsetFetch for group {self.group_id}")
                return {tp: fetched.offsets.get(tp) for tp in wanted}
            except CoordinatorUnavailableError:
                self._coordinator_dead()
                if monotonic_ms() >= deadline:
                    raise
                time.sleep(min(backoff.next_ms(), max(deadline - monotonic_ms(), 0)) / 1000)

    def _maybe_auto_commit(self) -> None:
        if not self.config.enable_auto_commit or monotonic_ms() < self._next_auto_commit_ms:
            return
        self._next_auto_commit_ms = monotonic_ms() + self.config.options.auto_commit_interval_ms
        self._commit_processed_quietly(None)

    def _commit_processed_quietly(self, only: frozenset[TopicPartition] | None) -> None:
        with self._lock:
            pending = {tp: o for tp, o in self._processed.items() if only is None or tp in only}
        if not pending:
            return
        try:
            self.commit_sync(pending)
        except (CommitFailedError, CoordinatorRequestError, CoordinatorUnavailableError) as exc:
            log.warning("group %s: auto commit failed: %s", self.group_id, exc)

    # --- leaving -----------------------------------------------------------------------------------------------
    def _leave_group(self, reason: str) -> None:
        with self._lock:
            generation = self._generation
        if not generation.member_id:
            return
        try:
            client = self._ensure_coordinator()
            error = client.leave_group(group_id=self.group_id, member_id=generation.member_id,
                                       group_instance_id=self.config.group_instance_id, reason=reason)
            log.info("group %s: left as %s (%s)", self.group_id, generation.member_id, error.name)
        except CoordinatorUnavailableError as exc:
            log.info("group %s: LeaveGroup not delivered: %s", self.group_id, exc)

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
                    owned, stable = self._owned, self._state is MemberState.STABLE
                if owned and stable:
                    self._revoke(owned)
                self._leave_group("the member is closing")
        finally:
            self._closed = True
            with self._lock:
                self._state = MemberState.UNJOINED
            self._coordinator_dead()
            if self._commit_pool is not None:
                self._commit_pool.shutdown(wait=True)

    def __enter__(self) -> GroupMember:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
