"""The materializer: appends the rows of committed record-log batches to the queryable state tables.

Written by the lease holder only, after its log commit (DESIGN rule 7). The lead's wiring is::

    materializer = Materializer(root, config=MaterializerConfig.from_config(config))
    loaded = record_log.load(); version = record_log.takeover(epoch, expected_version=loaded.version)
    materializer.rebuild(loaded.records, log_version=version, epoch=epoch)     # once, on takeover
    ...after every durable log commit:
    materializer.submit(CommittedBatch(records=..., log_version=v, epoch=epoch, committed_at=now))
    task = asyncio.create_task(run_materializer(materializer))                  # flushes, logs the lag

Batching. :meth:`Materializer.flush` (or :meth:`apply_batches`) turns every pending log batch into at most one Delta
commit per table it touches, so the number of state commits per second is capped by the flush interval
(``state.materialize.interval.ms``) whatever the log's commit rate, and the lag stays near that interval.

Idempotence. Each table's rows carry ``log_version``; before writing, rows at or below the table's highest
``log_version`` (read once from the Delta file statistics, then kept in memory) are dropped, so a retried flush
never writes a log version twice, even after a crash between the commits of two tables. A rebuild is skipped for a
table that already holds rows of the rebuilding epoch.

Consumer groups (KIP-848) are many records per group; the materializer keeps a replica of them and writes each group
it touches as a whole (:mod:`groupcoord.state.consumer_rows`), naming topics through the catalog.

Rebuild. A new holder cannot know what its predecessor materialized, so on takeover it writes the whole current
state (the loaded records, compacted) as fresh rows at the takeover's log version, plus deletion rows for every key
the tables still show but the log no longer has. History stays: nothing is ever rewritten or removed except by
:meth:`Materializer.maintain` (file compaction and vacuum beyond the retention).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import threading
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from uuid import UUID

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties, write_deltalake
from deltalake.exceptions import DeltaError

from groupcoord.config.binding import KeyedConfig, from_key
from groupcoord.coordinator.consumer_records import ConsumerGroupMetadataRecord
from groupcoord.coordinator.encoded import EncodedRecord
from groupcoord.coordinator.hard_state import HardStateStore
from groupcoord.coordinator.records import (
    GroupMetadataRecord,
    OffsetCommitRecord,
    Record,
    RecordChunk,
    Records,
    chunk_size,
    decode_record,
    new_group_tombstone,
    new_offset_tombstone,
)
from groupcoord.log.base import EPOCH_KIND
from groupcoord.state.acl_rows import vanished_acls
from groupcoord.state.consumer_rows import ConsumerGroupReplica
from groupcoord.state.rows import RowBuilder, commit_generations
from groupcoord.state.schema import ACLS, ASSIGNMENTS, GROUPS, MEMBERS, OFFSETS, STATE_TABLES, TableName
from groupcoord.state.views import read_view
from groupcoord.state_root import StateRoot
from groupcoord.storage.background import background_executor
from groupcoord.storage.tables import (
    CompactionReport,
    compact_table,
    is_table,
    open_table,
    table_dataset,
    table_properties,
)
from groupcoord.topics import TopicCatalog

log = logging.getLogger("groupcoord.state.materializer")

YIELD_EVERY_S = 0.001
"""A flush building rows gives up the GIL after about this much work (between two batches)."""

LOG_VERSION_KEY = "groupcoord.log_version"
"""commitInfo key: the highest log version a state commit holds rows of."""
EPOCH_KEY = "groupcoord.epoch"
"""commitInfo key: the epoch of the holder that wrote a state commit."""
OPERATION_KEY = "groupcoord.operation"
"""commitInfo key: ``apply`` or ``rebuild``."""


@dataclass(frozen=True, kw_only=True)
class MaterializerConfig(KeyedConfig):
    """Flush timing and the Delta properties of the state tables."""

    interval_ms: int = field(default=250, metadata=from_key("state.materialize.interval.ms"))
    lag_target_ms: int = field(default=1000, metadata=from_key("state.materialize.lag.target.ms"))
    checkpoint_interval: int = field(default=10, metadata=from_key("log.checkpoint.interval"))
    retention_hours: int = field(default=168, metadata=from_key("history.retention.hours"))


@dataclass(frozen=True, kw_only=True)
class CommittedBatch:
    """One durable record-log batch: its records (epoch markers allowed), version, writer epoch and commit time.

    ``records`` may be the encoded records as logged or, cheaper, the core's typed records, blocks of offsets
    (:class:`~groupcoord.coordinator.records.OffsetCommits`) kept whole (the holder has both: decoding is most of a
    flush's cost). A ``snapshot`` batch restates the current state, which the tables already
    hold: it is counted as materialized without writing rows.
    """

    records: tuple[EncodedRecord | RecordChunk, ...]
    log_version: int
    epoch: int
    committed_at: dt.datetime
    snapshot: bool = False


@dataclass(frozen=True)
class MaterializerLag:
    """How far the state tables trail the record log.

    ``log_version`` is the newest committed log version the materializer was given, ``materialized_version`` the
    newest one the tables reflect, ``pending_batches`` the batches between them, and ``seconds`` how long ago the
    oldest of those was committed (0 when none is pending).
    """

    log_version: int
    materialized_version: int
    pending_batches: int
    seconds: float

    def __str__(self) -> str:
        return (f"materialized log version {self.materialized_version} of {self.log_version} "
                f"({self.pending_batches} batches pending, {self.seconds:.3f} s behind)")


class Materializer:
    """Writes the materialized state tables of ``root`` (see the module docs). Thread-safe."""

    def __init__(self, root: StateRoot, *, config: MaterializerConfig | None = None) -> None:
        self.root = root
        self.config = config or MaterializerConfig()
        self._write_lock = threading.Lock()
        self._queue_lock = threading.Lock()
        self._pending: list[CommittedBatch] = []
        self._watermarks: dict[TableName, tuple[int, int]] = {}  # (highest log_version, highest epoch) per table
        self._generations: dict[str, int | None] | None = None
        self._consumer_groups = ConsumerGroupReplica()
        self._topic_names: dict[UUID, str] = {}
        self._materialized = -1
        self._log_version = -1
        self.commits = 0
        """State-table commits made by this materializer."""

    # --- incremental --------------------------------------------------------------------------------------------
    def apply(self, batch_records: Sequence[EncodedRecord | RecordChunk], *, log_version: int, epoch: int,
              now: dt.datetime) -> int:
        """Append the rows of the one log batch committed at ``log_version``; returns the rows written."""
        return self.apply_batches(
            [CommittedBatch(records=tuple(batch_records), log_version=log_version, epoch=epoch, committed_at=now)])

    def apply_batches(self, batches: Sequence[CommittedBatch]) -> int:
        """Append the rows of several committed log batches, one Delta commit per table touched."""
        if not batches:
            return 0
        ordered = sorted(batches, key=lambda b: b.log_version)
        with self._write_lock:
            staged = self._consumer_groups.staged()
            builder = RowBuilder(self._current_generations(), consumer=staged, topic_name=self._topic_name)
            last_yield = time.perf_counter()
            for batch in ordered:
                if batch.snapshot:
                    continue
                now_ms = _millis(batch.committed_at)
                seq = 0
                for record in _core_records(batch.records):
                    builder.add(record, log_version=batch.log_version, epoch=batch.epoch, seq=seq, now_ms=now_ms)
                    seq += chunk_size(record)
                if time.perf_counter() - last_yield >= YIELD_EVERY_S:
                    # Hand the GIL over instead of holding it for a whole switch interval (5 ms): the event loop
                    # that acknowledges writes is waiting for it.
                    time.sleep(0)
                    last_yield = time.perf_counter()
            written = 0
            for name, rows in builder.tables().items():
                fresh = rows.filter(pc.greater(rows.column("log_version"), self._watermark(name)[0]))
                if fresh.num_rows:
                    self._write(name, fresh, epoch=ordered[-1].epoch, operation="apply")
                    written += fresh.num_rows
            staged.commit()
            self._generations = builder.generations
            self._advance(ordered[-1].log_version)
        return written

    # --- queue --------------------------------------------------------------------------------------------------
    def submit(self, batch: CommittedBatch) -> None:
        """Queue a durable log batch for the next :meth:`flush` (cheap; call it right after the log commit)."""
        with self._queue_lock:
            self._pending.append(batch)
            self._log_version = max(self._log_version, batch.log_version)

    def queued(self) -> int:
        """How many batches are queued now. :func:`run_materializer` reads it on the event loop, between two
        loop turns, so that a flush never splits the batches of one log version (see :meth:`flush`)."""
        with self._queue_lock:
            return len(self._pending)

    def flush(self, count: int | None = None) -> int:
        """Materialize the first ``count`` queued batches (all by default); returns the rows written. On failure
        the batches stay queued.

        Every request of one log commit submits its own batch, all with the commit's version, and rows at or below
        a table's highest written version are skipped as already written. So a flush must take either all or none
        of a version's batches: the holder submits them in one pass of the event loop right after the commit, so
        a count read on the loop between passes (:meth:`queued`) never splits one. A flush of everything is safe
        when no submission is under way (shutdown).
        """
        with self._queue_lock:
            batches = self._pending[:count] if count is not None else list(self._pending)
        if not batches:
            return 0
        written = self.apply_batches(batches)
        with self._queue_lock:
            del self._pending[:len(batches)]
        return written

    def lag(self, now: dt.datetime | None = None) -> MaterializerLag:
        """The current lag of the tables behind the log (for logging and metrics)."""
        now = now or dt.datetime.now(dt.UTC)
        with self._queue_lock:
            pending = [b for b in self._pending if b.log_version > self._materialized]
            oldest = min((b.committed_at for b in pending), default=None)
            return MaterializerLag(
                log_version=max(self._log_version, self._materialized),
                materialized_version=self._materialized,
                pending_batches=len(pending),
                seconds=0.0 if oldest is None else max(0.0, (now - oldest).total_seconds()),
            )

    @property
    def materialized_version(self) -> int:
        """The newest log version the tables reflect (-1 before the first apply or rebuild)."""
        return self._materialized

    # --- takeover -----------------------------------------------------------------------------------------------
    def rebuild(self, records: Sequence[EncodedRecord | Record], *, log_version: int, epoch: int,
                now: dt.datetime | None = None) -> int:
        """Rewrite the state that ``records`` (a loaded log: snapshot plus tail) build, as rows at ``log_version``
        and ``epoch``, and delete the keys the tables show that this state lacks. Returns the rows written."""
        now_ms = _millis(now or dt.datetime.now(dt.UTC))
        loaded = list(Records(_core_records(records)))
        state = HardStateStore()
        for record in loaded:
            state.replay(record)
        with self._write_lock:
            current = state.snapshot_records()
            replica = ConsumerGroupReplica()
            staged = replica.staged()
            builder = RowBuilder(offset_generations=commit_generations(loaded), consumer=staged,
                                 topic_name=self._topic_name)
            for seq, record in enumerate([*current, *self._vanished(current)]):
                builder.add(record, log_version=log_version, epoch=epoch, seq=seq, now_ms=now_ms)
            written = 0
            for name, rows in builder.tables().items():
                if self._watermark(name)[1] >= epoch:
                    log.info("state table %s already rebuilt in epoch %d", name, epoch)
                    continue
                self._write(name, rows, epoch=epoch, operation="rebuild")
                written += rows.num_rows
            staged.commit()
            self._consumer_groups = replica
            self._generations = builder.generations
            self._advance(log_version)
        log.info("rebuilt the state tables at log version %d, epoch %d: %d rows", log_version, epoch, written)
        return written

    def _vanished(self, current: Iterable[Record]) -> list[Record]:
        """Tombstones for every group and offset the tables show but ``current`` (the whole state) lacks."""
        groups: set[str] = set()
        offsets: set[tuple[str, str, int]] = set()
        for record in current:
            if isinstance(record, OffsetCommitRecord):
                offsets.add((record.group_id, record.topic, record.partition))
            elif isinstance(record, GroupMetadataRecord | ConsumerGroupMetadataRecord):
                groups.add(record.group_id)
        shown_groups: set[str] = set()
        for table in (GROUPS, MEMBERS, ASSIGNMENTS):
            shown_groups.update(read_view(self.root, table).column("group_id").to_pylist())
        shown = read_view(self.root, OFFSETS).select(["group_id", "topic", "partition"]).to_pylist()
        tombstones: list[Record] = [new_group_tombstone(g) for g in sorted(shown_groups - groups)]
        tombstones.extend(new_offset_tombstone(*key) for key in sorted(
            {(r["group_id"], r["topic"], r["partition"]) for r in shown} - offsets))
        tombstones.extend(vanished_acls(read_view(self.root, ACLS), current))
        return tombstones

    # --- maintenance --------------------------------------------------------------------------------------------
    def maintain(self) -> list[CompactionReport]:
        """Compact each table's small per-flush files, vacuum files unreferenced beyond the retention, checkpoint
        and clean up expired log entries (:func:`~groupcoord.storage.tables.compact_table`); returns a report
        per existing table. Run it on the holder's maintenance timer, off the event loop."""
        reports: list[CompactionReport] = []
        with self._write_lock:
            for name in STATE_TABLES:
                report = compact_table(self.root.state_table_path(name),
                                       retention_hours=self.config.retention_hours)
                if report is not None:
                    reports.append(report)
        return reports

    # --- helpers ------------------------------------------------------------------------------------------------
    def _write(self, name: TableName, rows: pa.Table, *, epoch: int, operation: str) -> None:
        path = self.root.state_table_path(name)
        highest = int(pc.max(rows.column("log_version")).as_py())
        metadata = {LOG_VERSION_KEY: highest, EPOCH_KEY: epoch, OPERATION_KEY: operation}
        exists = is_table(path)
        write_deltalake(
            path.uri, rows, mode="append", storage_options=path.delta_options(),
            name=None if exists else f"groupcoord_state_{name}",
            configuration=None if exists else table_properties(
                checkpoint_interval=self.config.checkpoint_interval, retention_hours=self.config.retention_hours),
            commit_properties=CommitProperties(custom_metadata=metadata),
        )
        self.commits += 1
        old_version, old_epoch = self._watermark(name)
        self._watermarks[name] = (max(old_version, highest), max(old_epoch, epoch))

    def _watermark(self, name: TableName) -> tuple[int, int]:
        """The highest ``log_version`` and ``epoch`` in table ``name`` (-1, -1 when it does not exist)."""
        if name not in self._watermarks:
            self._watermarks[name] = _read_watermark(self.root, name)
        return self._watermarks[name]

    def _topic_name(self, topic_id: UUID) -> str:
        """The catalog's name of ``topic_id`` (re-read once when it is new; its id as text if the catalog lacks it,
        remembered, since an id is given at a topic's creation and never comes back)."""
        if topic_id not in self._topic_names:
            self._topic_names = {i: name for name, i in TopicCatalog(self.root).topic_ids().items()}
            self._topic_names.setdefault(topic_id, str(topic_id))
        return self._topic_names[topic_id]

    def _current_generations(self) -> dict[str, int | None]:
        if self._generations is None:
            groups = read_view(self.root, GROUPS)
            self._generations = {
                g: (gen if count else None) for g, gen, count in zip(
                    groups.column("group_id").to_pylist(), groups.column("generation").to_pylist(),
                    groups.column("member_count").to_pylist(), strict=True)}
        return self._generations

    def _advance(self, log_version: int) -> None:
        with self._queue_lock:
            self._materialized = max(self._materialized, log_version)
            self._log_version = max(self._log_version, self._materialized)


def _read_watermark(root: StateRoot, name: TableName) -> tuple[int, int]:
    """The highest ``log_version`` and ``epoch`` in a table, from its files' statistics where they have them."""
    path = root.state_table_path(name)
    if not is_table(path):
        return -1, -1
    table = open_table(path)
    actions = pa.table(table.get_add_actions(flatten=True))
    if actions.num_rows == 0:
        return -1, -1
    if all(f"max.{c}" in actions.column_names and actions.column(f"max.{c}").null_count == 0
           for c in ("log_version", "epoch")):
        return (int(pc.max(actions.column("max.log_version")).as_py()),
                int(pc.max(actions.column("max.epoch")).as_py()))
    rows = table_dataset(table).to_table(columns=["log_version", "epoch"])  # files written without statistics
    return int(pc.max(rows.column("log_version")).as_py()), int(pc.max(rows.column("epoch")).as_py())


def _core_records(records: Iterable[EncodedRecord | RecordChunk]) -> list[RecordChunk]:
    """The core's records of a batch, typed (blocks of offsets kept whole), without the log's epoch markers."""
    return [decode_record(r) if isinstance(r, EncodedRecord) else r
            for r in records if not (isinstance(r, EncodedRecord) and r.kind == EPOCH_KIND)]


def _millis(when: dt.datetime) -> int:
    if when.tzinfo is None:
        raise ValueError(f"timestamps must be timezone-aware (UTC): {when!r}")
    return int(when.timestamp() * 1000)


async def run_materializer(materializer: Materializer, *, executor: Executor | None = None) -> None:
    """Flush ``materializer`` every ``interval_ms`` in ``executor`` until cancelled, logging the lag.

    Without an ``executor`` the flushes run in a thread of their own at a lower scheduling priority than the
    event loop and the log's commits (:func:`~groupcoord.storage.background.background_executor`): on a machine
    short of cores, materializing then waits rather than the acknowledgements.

    Flushes start ``interval_ms`` apart (not ``interval_ms`` after the previous one ended), so the lag stays near
    the interval plus one flush even when flushes are slow. A failed flush (storage unavailable) keeps its batches
    queued and is retried at the next tick. On cancellation nothing is flushed: call :meth:`Materializer.flush`
    once more at shutdown if wanted.
    """
    loop = asyncio.get_running_loop()
    own = executor is None
    if executor is None:
        executor = background_executor("groupcoord-materializer")
    interval = materializer.config.interval_ms / 1000
    next_start = loop.time() + interval
    try:
        while True:
            await asyncio.sleep(max(0.0, next_start - loop.time()))
            next_start = loop.time() + interval
            try:
                await loop.run_in_executor(executor, materializer.flush, materializer.queued())
            except (OSError, DeltaError, pa.ArrowException) as exc:
                log.warning("materializing state failed, will retry: %s", exc)
            lag = materializer.lag()
            if lag.seconds * 1000 > materializer.config.lag_target_ms:
                log.warning("state tables lag the log: %s", lag)
            else:
                log.debug("%s", lag)
    finally:
        if own:
            executor.shutdown(wait=False)  # a flush under way finishes (its writes hold the write lock)
