"""One coordinator process's life: stand by for the lease, load, serve, renew, and step down.

The cycle, repeated until stopped:

1. **Standby.** Poll the lease table until the lease is free (released, or expired by more than the safety
   margin), then take it with the next epoch. Nothing listens meanwhile.
2. **Load.** Replay the record log's latest snapshot and tail into a fresh core, append the epoch marker (so a
   deposed holder's next append fails), and rebuild soft state (``on_loaded``).
3. **Serve.** Start the Kafka endpoint and the timers; every record goes through the commit batcher and is
   acknowledged only once durable; the catalog is polled for partition changes; snapshots and log maintenance run
   in the batcher's commit slot.
4. **Renew.** Renew the lease every ``lease.renew.interval.ms``, from a thread of its own (:class:`LeaseKeeper`) so a
   busy event loop cannot delay it. If renewal has not succeeded by expiry minus
   ``lease.safety.ms``, or the log or the lease was taken by someone else, stop answering every group API at once
   (NOT_COORDINATOR) and go back to standby.

On stop (SIGTERM in ``serve``) pending requests get NOT_COORDINATOR, queued writes are drained, and the lease is
released so a standby takes over at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import logging
import socket
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from groupcoord.config import Config
from groupcoord.coordinator import CoordinatorConfig, GroupCoordinator
from groupcoord.coordinator.effects import (
    Effect,
    EffectAnswer,
    NeedsAssignment,
    NeedsTargetAssignment,
)
from groupcoord.coordinator.records import decode_record
from groupcoord.log.base import LogFencedError, StorageUnavailableError
from groupcoord.log.batcher import BatcherConfig, CommitBatcher
from groupcoord.log.config import LeaseConfig, LogConfig
from groupcoord.log.delta import DeltaRecordLog
from groupcoord.log.lease import HeldLease, LeaseLostError, LeaseTable, utc_now
from groupcoord.log.maintenance import maintain_record_log
from groupcoord.metrics import AuthenticationFailures, CoordinatorMetrics, MetricsServer, Phase, ServingTerm
from groupcoord.protocol.errors import Errors
from groupcoord.runtime import (
    AssignmentQueue,
    AssignmentRunner,
    CoordinatorService,
    DurableWriter,
    TargetAssignmentRunner,
    wall_clock_ms,
)
from groupcoord.runtime.guards import CrashPointLog, WriteGuard
from groupcoord.server.api import BrokerAddress
from groupcoord.server.dispatcher import build_dispatcher
from groupcoord.server.endpoint import Endpoint, EndpointConfig
from groupcoord.state.materializer import Materializer, MaterializerConfig, run_materializer
from groupcoord.state_root import StateRoot
from groupcoord.topics import TopicCatalog, TopicsConfig
from groupcoord.topics.appender import TopicAppender
from groupcoord.topics.embedded import EmbeddedTopics
from groupcoord.topics.maintenance import maintain_topic_logs
from groupcoord.topics.producer_state import ProducerIdAllocator
from groupcoord.topics.watch import CatalogChange, CatalogWatcher

log = logging.getLogger("groupcoord.host")


async def run_until_stopped(host: CoordinatorHost, stop: asyncio.Event, *, deadline_s: float) -> None:
    """Run ``host`` until ``stop`` is set (or it ends on its own), then give its step-down ``deadline_s`` seconds
    to drain and release the lease before cancelling it."""
    task = asyncio.create_task(host.run(stop))
    stopping = asyncio.create_task(stop.wait())
    await asyncio.wait({task, stopping}, return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    try:
        await asyncio.wait_for(asyncio.shield(task), deadline_s)
    except TimeoutError:
        task.cancel()
        log.warning("the coordinator did not step down within %.1f s; cancelled", deadline_s)


def pick_free_port(host: str) -> int:
    """A port that is free on ``host`` now; the standby keeps it so the lease can advertise it before listening."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass(frozen=True, kw_only=True)
class HostConfig:
    """Everything a coordinator host needs, resolved from ``spark.groupcoord.*`` keys."""

    endpoint: EndpointConfig
    lease: LeaseConfig = field(default_factory=LeaseConfig)
    log: LogConfig = field(default_factory=LogConfig)
    coordinator: CoordinatorConfig = field(default_factory=CoordinatorConfig)
    materializer: MaterializerConfig = field(default_factory=MaterializerConfig)
    topics: TopicsConfig = field(default_factory=TopicsConfig)
    holder_id: str = field(default_factory=lambda: f"{socket.gethostname()}-{uuid.uuid4().hex[:8]}")
    metrics_listen: str | None = None
    """``HOST:PORT`` of ``/metrics`` and ``/health`` (``metrics.listen``); ``None``: not served."""
    metadata_refresh_ms: int = 1000
    standby_poll_ms: int = 500
    lease_check_ms: int = 100

    @classmethod
    def from_config(cls, config: Config, *, holder_id: str | None = None) -> HostConfig:
        """Build from resolved configuration; port 0 is replaced by a concrete free port."""
        endpoint = EndpointConfig.from_config(config)
        if endpoint.port == 0:
            endpoint = replace(endpoint, port=pick_free_port(endpoint.host))
        base = cls(endpoint=endpoint)
        return cls(
            endpoint=endpoint,
            lease=LeaseConfig.from_config(config),
            log=LogConfig.from_config(config),
            coordinator=CoordinatorConfig.from_config(config),
            materializer=MaterializerConfig.from_config(config),
            topics=TopicsConfig.from_config(config),
            metadata_refresh_ms=config["metadata.refresh.ms"],
            metrics_listen=config["metrics.listen"],
            holder_id=holder_id or base.holder_id,
        )

    @property
    def advertised(self) -> str:
        """``HOST:PORT`` written into the lease for members and tools to find."""
        host, port = self.endpoint.advertised or (self.endpoint.host, self.endpoint.port)
        return f"{host}:{port}"


class CoordinatorHost:
    """Runs the coordinator of one state root until :meth:`run`'s ``stop`` event is set.

    ``on_ready(bound_address)`` is called each time this process starts serving; ``on_standby(holder)`` when it
    finds the lease held by someone else. ``assignment_runner`` computes ``server-*`` assignments; without one the core
    refuses such protocols at JoinGroup with INCONSISTENT_GROUP_PROTOCOL (and a group already selected on one, loaded
    from the log, gets the same error at SyncGroup). ``target_assignment_runner`` computes consumer groups' target
    assignments (KIP-848); without one ConsumerGroupHeartbeat is not served (clients are told the API is
    unsupported).

    ``metrics`` (:class:`~groupcoord.metrics.CoordinatorMetrics`, its own registry) is fed all along, and served on
    ``config.metrics_listen`` from :meth:`run`'s start to its end, standing by included.
    """

    def __init__(
        self,
        root: StateRoot,
        config: HostConfig,
        *,
        assignment_runner: AssignmentRunner | None = None,
        target_assignment_runner: TargetAssignmentRunner | None = None,
        on_ready: Callable[[BrokerAddress], None] | None = None,
        on_standby: Callable[[str], None] | None = None,
    ) -> None:
        self.root = root
        self.config = config
        self.lease_table = LeaseTable(root.lease_path, config=config.lease)
        self.metrics = CoordinatorMetrics(holder_id=config.holder_id, lease_table=self.lease_table)
        self.assignment_runner = self.metrics.timed(assignment_runner, "classic")
        self.target_assignment_runner = self.metrics.timed(target_assignment_runner, "consumer")
        self.on_ready = on_ready
        self.on_standby = on_standby
        self.serving = asyncio.Event()
        self.endpoint: Endpoint | None = None
        self.coordinator: GroupCoordinator | None = None
        self.metrics_server: MetricsServer | None = None
        """The ``/metrics`` and ``/health`` server while :meth:`run` runs with ``metrics_listen`` set."""

    # --- the cycle ------------------------------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Alternate between standby and serving until ``stop`` is set."""
        server = await self._start_metrics_server()
        try:
            while not stop.is_set():
                lease = await self._acquire(stop)
                if lease is None:
                    return
                await _Term(self, lease, stop).serve()
        finally:
            self.metrics.leave(Phase.STOPPED)
            if server is not None:
                await asyncio.to_thread(server.stop)

    async def _start_metrics_server(self) -> MetricsServer | None:
        """Serve ``/metrics`` and ``/health`` on ``metrics_listen``; a port that cannot be bound is logged, and the
        coordinator runs on without them (its members matter more than its dashboard)."""
        if not self.config.metrics_listen:
            return None
        server = MetricsServer(self.config.metrics_listen, self.metrics.registry, self.metrics.host)
        try:
            await asyncio.to_thread(server.start)
        except OSError as exc:
            log.error("cannot serve metrics on %s: %s; running without them", self.config.metrics_listen, exc)
            return None
        self.metrics_server = server
        return server

    async def _acquire(self, stop: asyncio.Event) -> HeldLease | None:
        announced = False
        while not stop.is_set():
            try:
                lease = await asyncio.to_thread(
                    self.lease_table.try_acquire, self.config.holder_id, self.config.advertised
                )
            except StorageUnavailableError as exc:
                log.warning("cannot read the lease (%s); retrying", exc)
                lease = None
            if lease is not None:
                return lease
            if not announced:
                try:
                    current = await asyncio.to_thread(self.lease_table.read_current)
                except StorageUnavailableError as exc:  # the storage still down: stand by, try again
                    log.warning("cannot read the lease (%s); retrying", exc)
                else:
                    holder = f"{current.holder} at {current.address}" if current else "another process"
                    log.info("standing by: the lease is held by %s", holder)
                    self.metrics.leave(Phase.STANDING_BY)
                    if self.on_standby is not None:
                        self.on_standby(holder)
                    announced = True
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.config.standby_poll_ms / 1000)
        return None


LOOP_LAG_WARN_S = 0.5
"""A wake-up of the loop-lag watch this much late is logged: members' requests wait about as long."""
TERM_GC_THRESHOLD = (50_000, 50, 10)
"""The cyclic collector's thresholds while serving (Python's defaults: 700, 10, 10). A commit of 50 partitions
allocates hundreds of tuples, records and responses, and its records live on until the materializer's next flush:
at the defaults the collector ran every few requests, and its older generations, walking those survivors, often;
it took 18 % of serve's CPU under a commit load, 6 % with these (and the CPU per committed offset fell from 45 to
37 us; 200 committers x 50 partitions). The oldest generation keeps its default, and Python collects it only once
the objects that survived since the last full collection are a quarter of those it holds."""


class LeaseKeeper:
    """Renews a held lease from a dedicated thread and fences the holder the moment it may no longer serve.

    On the event loop, a renewal waits for its timer and then for its result callback behind every ready request:
    a join storm of thousands of members delayed it past ``lease.safety.ms`` and the holder stepped down. Here the
    thread sleeps on its own clock, commits the renewal (delta-rs releases the GIL while it writes) and checks the
    safe window every ``check_s``. ``on_lost`` is called from this thread, once, when the lease is lost or its
    window has closed; it must be thread-safe.
    """

    def __init__(self, table: LeaseTable, lease: HeldLease, *, renew_interval_s: float, check_s: float,
                 on_lost: Callable[[str], None], maintain_every: int = 30) -> None:
        self._table = table
        self._lease = lease
        self._renew_interval_s = renew_interval_s
        self._check_s = check_s
        self._on_lost = on_lost
        self._maintain_every = maintain_every
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lease-keeper", daemon=True)

    @property
    def lease(self) -> HeldLease:
        """The newest lease committed (what a release must be committed on top of)."""
        with self._lock:
            return self._lease

    def start(self) -> None:
        """Start renewing."""
        self._thread.start()

    def stop(self) -> HeldLease:
        """Stop renewing (a commit under way lands first; blocks until it has) and return the newest lease."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join()
        return self.lease

    def _run(self) -> None:
        renewals = 0
        next_renewal = time.monotonic() + self._renew_interval_s
        while not self._stopping.wait(max(0.0, min(self._check_s, next_renewal - time.monotonic()))):
            if time.monotonic() >= next_renewal:
                next_renewal = time.monotonic() + self._renew_interval_s
                try:
                    self._update(self._table.renew)
                    renewals += 1
                    if renewals % self._maintain_every == 0:
                        self._update(self._table.maintain)
                except LeaseLostError as exc:
                    self._on_lost(f"lost the lease: {exc}")
                    return
                except StorageUnavailableError as exc:
                    log.warning("lease renewal failed (%s); serving until %s at most", exc, self.lease.serve_until)
            lease = self.lease
            if not lease.may_serve(utc_now()):
                self._on_lost(f"lease epoch {lease.epoch} not renewed in time: no longer serving")
                return

    def _update(self, operation: Callable[[HeldLease], HeldLease]) -> None:
        renewed = operation(self.lease)
        with self._lock:
            self._lease = renewed


class _Term:
    """One term as lease holder: from load to step-down. Owns the core, the batcher and the endpoint."""

    def __init__(self, host: CoordinatorHost, lease: HeldLease, stop: asyncio.Event) -> None:
        self.host = host
        self.config = host.config
        self.lease = lease
        self.stop = stop
        self.deposed = asyncio.Event()
        self.log = DeltaRecordLog(
            host.root.log_path,
            checkpoint_interval=self.config.log.checkpoint_interval,
            retention_minutes=self.config.log.retention_minutes,
            fsync=self.config.log.fsync,
        )
        self.tasks: list[asyncio.Task[Any]] = []
        self.keeper: LeaseKeeper | None = None
        self.appender: TopicAppender | None = None
        self.loop = asyncio.get_running_loop()
        self.gc_threshold = gc.get_threshold()
        """The collector's thresholds before this term set :data:`TERM_GC_THRESHOLD` (restored at step-down)."""

    async def serve(self) -> None:
        started = time.perf_counter()
        loaded = await asyncio.to_thread(self.log.load)
        version = await asyncio.to_thread(self.log.takeover, self.lease.epoch, expected_version=loaded.version)
        # Without a runner the core refuses server-* protocols at JoinGroup instead of failing every SyncGroup.
        core = GroupCoordinator(replace(self.config.coordinator,
                                        server_side_assignment=self.host.assignment_runner is not None))
        for record in loaded.compacted().records:  # the latest record per key replays to the same hard state
            core.replay(decode_record(record))
        self.core = core
        # Everything alive now (the loaded state, imported modules) lives as long as the term: moved out of the
        # collector's reach, a full collection walks only what serving allocates (measured at the commit target
        # with the materializer: full collections went from ~30 ms to a few, stalling every thread less).
        gc.freeze()
        self.gc_threshold = gc.get_threshold()
        gc.set_threshold(*TERM_GC_THRESHOLD)
        self.materializer = Materializer(self.host.root, config=self.config.materializer)
        try:  # the new holder restates the queryable tables; failing that must not stop it serving
            await asyncio.to_thread(self.materializer.rebuild, loaded.records, log_version=version,
                                    epoch=self.lease.epoch)
        except Exception as exc:
            log.warning("could not rebuild the materialized state tables: %s", exc)
        metrics = self.host.metrics
        batcher = CommitBatcher(
            CrashPointLog(self.log), version=version, config=BatcherConfig.from_log_config(self.config.log),
            on_commit=metrics.on_record_log_commit,
        )
        self.writer = DurableWriter(batcher, self.materializer, epoch=self.lease.epoch,
                                    snapshot_interval=self.config.log.snapshot_interval,
                                    snapshot_records=core.snapshot_records, records_since_snapshot=loaded.tail_records)
        self.assignments = (
            AssignmentQueue(self.host.assignment_runner, kind=NeedsAssignment, complete=self._complete,
                            stopped=self._stopped_serving),
            AssignmentQueue(self.host.target_assignment_runner, kind=NeedsTargetAssignment,
                            complete=self._complete, stopped=self._stopped_serving),
        )
        self.service = CoordinatorService(
            WriteGuard(core, lambda: self.writer.healthy),
            persist=metrics.watch_records(core, self.writer.persist),
            on_effects=self._on_effects,
            on_fenced=self.deposed.set,
        )
        topics = EmbeddedTopics(self.host.root)
        # Produce's group commit and idempotent producers' state live for this term only (docs/compatibility.md).
        self.appender = TopicAppender(self.host.root, config=self.config.topics)
        endpoint = Endpoint(
            metrics.metered(build_dispatcher(
                topics=topics, service=self.service, topic_reader=topics, topic_writer=self.appender,
                producer_ids=ProducerIdAllocator(self.lease.epoch),
                consumer_groups=self.host.target_assignment_runner is not None,
                topic_admin=TopicCatalog(self.host.root, config=self.config.topics),
                credentials=core.credentials)),
            config=self.config.endpoint,
            credentials=core.credentials,
        )
        metrics.count_authentication_failures(endpoint if isinstance(endpoint, AuthenticationFailures) else None)
        self.host.coordinator, self.host.endpoint = core, endpoint
        # The first catalog snapshot comes before serving: consumer groups cannot answer heartbeats without one.
        self.catalog_watcher = CatalogWatcher(TopicCatalog(self.host.root))
        first_catalog = await self._poll_catalog()
        try:
            await endpoint.start()
            self.service.apply(core.on_loaded(wall_clock_ms()))
            self._apply_catalog(first_catalog)
            await self.service.start()
            log.info(
                "serving as %s with lease epoch %d: loaded %d records (log version %d) in %.2f s",
                self.config.holder_id, self.lease.epoch, len(loaded.records), version,
                time.perf_counter() - started,
            )
            self.host.serving.set()
            if self.host.on_ready is not None:
                self.host.on_ready(endpoint.bound_address)
            self.keeper = LeaseKeeper(
                self.host.lease_table, self.lease, renew_interval_s=self.config.lease.renew_interval_ms / 1000,
                check_s=self.config.lease_check_ms / 1000, on_lost=self.depose_from_thread,
            )
            self.keeper.start()
            metrics.serving(ServingTerm(
                loop=self.loop, core=core, lease=self.current_lease, batcher=batcher, record_log=self.log.location,
                # The scrapes read log ends through their own topic logs: the Fetch path's hold their locks while
                # they read records, and a scrape waited seconds behind them under load.
                materializer=self.materializer, topics=EmbeddedTopics(self.host.root), appender=self.appender))
            self.tasks = [
                asyncio.create_task(self.watch_loop_lag(), name="loop-lag"),
                asyncio.create_task(self.watch_catalog(), name="catalog-watch"),
                asyncio.create_task(self.maintain_forever(), name="log-maintenance"),
                asyncio.create_task(run_materializer(self.materializer), name="materializer"),
            ]
            stop_wait = asyncio.create_task(self.stop.wait())
            deposed_wait = asyncio.create_task(self.deposed.wait())
            await asyncio.wait({stop_wait, deposed_wait}, return_when=asyncio.FIRST_COMPLETED)
            stop_wait.cancel()
            deposed_wait.cancel()
        finally:
            await self.step_down()

    def current_lease(self) -> HeldLease:
        """The newest lease of this term (renewed by the keeper once it runs)."""
        return self.keeper.lease if self.keeper is not None else self.lease

    def _stopped_serving(self) -> bool:
        return self.service.unavailable is not None

    def _on_effects(self, effects: Sequence[Effect]) -> None:
        for queue in self.assignments:
            queue.on_effects(effects)

    def _complete(self, answer: EffectAnswer) -> None:
        """Hand a runner's answer to the core, on the loop."""
        self.service.apply(self.core.complete(answer, wall_clock_ms()))

    async def step_down(self) -> None:
        """Stop answering, stop the endpoint, drain (if still the holder) and release the lease."""
        deposed = self.deposed.is_set()
        self.host.serving.clear()
        self.host.metrics.leave(Phase.STARTING)
        gc.unfreeze()  # this term's state may be collected again once it is gone
        gc.set_threshold(*self.gc_threshold)
        await self.service.stop(Errors.NOT_COORDINATOR)
        for queue in self.assignments:
            queue.cancel()
        for task in self.tasks:
            task.cancel()
        for task in self.tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self.keeper is not None:
            self.lease = await asyncio.to_thread(self.keeper.stop)
        if self.host.endpoint is not None:
            await self.host.endpoint.stop()
        if self.appender is not None:
            await asyncio.to_thread(self.appender.close)  # commits what was queued; nothing waits for it any more
        await self.writer.close(drain=not deposed)
        await asyncio.to_thread(self.log.close)  # waits for a background checkpoint in progress
        if not deposed:
            try:
                await asyncio.to_thread(self.materializer.flush)
            except Exception as exc:
                log.warning("could not flush the materialized state tables: %s", exc)
        if deposed:
            log.warning("deposed: stepped down from lease epoch %d", self.lease.epoch)
            return
        try:
            await asyncio.to_thread(self.host.lease_table.release, self.lease)
        except (LeaseLostError, StorageUnavailableError) as exc:
            log.warning("could not release the lease: %s", exc)

    # --- background duties ----------------------------------------------------------------------------------------

    async def watch_loop_lag(self) -> None:
        """Log when the event loop wakes up late: requests wait that long too (renewal does not, see
        :class:`LeaseKeeper`)."""
        interval = self.config.lease_check_ms / 1000
        while True:
            expected = time.monotonic() + interval
            await asyncio.sleep(interval)
            lag = time.monotonic() - expected
            if lag > LOOP_LAG_WARN_S:
                log.warning("the event loop woke up %.2f s late (busy serving)", lag)

    def depose_from_thread(self, reason: str) -> None:
        """Stop answering at once (the flag is read by the loop), then step down on the loop."""
        log.error("%s", reason)
        self.service.unavailable = Errors.NOT_COORDINATOR
        with contextlib.suppress(RuntimeError):  # the loop has already closed: nothing left to step down
            self.loop.call_soon_threadsafe(self.deposed.set)

    async def watch_catalog(self) -> None:
        while True:
            await asyncio.sleep(self.config.metadata_refresh_ms / 1000)
            self._apply_catalog(await self._poll_catalog())

    async def _poll_catalog(self) -> CatalogChange | None:
        try:
            return await asyncio.to_thread(self.catalog_watcher.poll)
        except Exception as exc:
            log.warning("cannot read the topic catalog: %s", exc)
            return None

    def _apply_catalog(self, change: CatalogChange | None) -> None:
        if change is not None and self.service.unavailable is None:
            self.service.apply(self.core.on_metadata_change(change.partition_counts, wall_clock_ms(),
                                                            topic_ids=change.topic_ids))

    async def maintain_forever(self) -> None:
        """Keep every table the holder writes small: the record log (only its final swap holds the commit slot),
        the topic logs and the materialized state tables (both off the loop).

        A failed step is logged and retried at the next run: a maintenance error must neither stop the holder nor
        end maintenance for good (the tables would then grow for as long as the holder lives). Only a fenced log
        ends it: another coordinator writes now, and this one is stepping down.
        """
        retention_hours = self.config.log.retention_hours
        while True:
            await asyncio.sleep(self.config.log.maintenance_interval_ms / 1000)
            started = time.monotonic()
            try:
                await maintain_record_log(self.writer.batcher, self.log)
            except LogFencedError:
                return
            except StorageUnavailableError as exc:
                log.warning("log maintenance failed: %s", exc)
            except Exception:
                log.exception("log maintenance failed; retrying at the next run")
            for name, step in (("topic logs", functools.partial(maintain_topic_logs, self.host.root,
                                                                  retention_hours=retention_hours)),
                               ("state tables", self.materializer.maintain)):
                try:
                    await asyncio.to_thread(step)
                except Exception as exc:  # a failed compaction must not stop the holder; the next run retries
                    log.warning("maintenance of the %s failed: %s", name, exc)
            took = time.monotonic() - started
            if took * 1000 > self.config.log.maintenance_interval_ms:
                log.warning("maintenance took %.1f s, longer than its %d ms interval", took,
                            self.config.log.maintenance_interval_ms)
