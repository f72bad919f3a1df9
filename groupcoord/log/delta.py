"""The record log as a Delta table (delta-rs): one conditional Delta commit per batch.

Versions. A batch's log version *is* the Delta table version of the commit that wrote it. The table does not exist
until the first append (log version -1); that append creates it at Delta version 0. Maintenance commits (compaction,
retention deletes, vacuum; see :mod:`groupcoord.log.maintenance`) also take Delta versions, so log versions may skip
numbers; ``log_version`` in every row is the version its batch was committed at, which makes Delta time travel and
the materialized tables' ``log_version`` column line up with the log.

Compare-and-set. Each append loads the table *at* the expected version and commits with
``CommitProperties(max_commit_retries=0)``. delta-rs writes ``_delta_log/<V+1>.json`` with a put-if-absent rename on
the local filesystem; when that file already exists and no retry is allowed it raises ``CommitFailedError``, which
becomes :class:`LogFencedError`. (With delta-rs's default retries a blind append would silently land at V+2: never
allow retries here.) Creating the table races the same way: a second creator finds the table and is fenced. Every
other failure (I/O, missing table, permissions) becomes :class:`StorageUnavailableError`.

Segments. Rows are partitioned by ``segment``: the log version of the snapshot that opened the segment, or -1
before the first snapshot. A snapshot batch at version V opens segment V. :meth:`DeltaRecordLog.load` reads only
the newest segment (partition pruning), i.e. the latest snapshot plus the tail after it; older segments are kept
for ``history.retention.hours`` and then deleted by maintenance. The schema is documented in
``docs/state-tables.md``.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties, DeltaTable, write_deltalake
from deltalake.exceptions import CommitFailedError, DeltaError

from groupcoord.coordinator.encoded import EncodedRecord
from groupcoord.log.base import (
    EPOCH_KIND,
    LoadedLog,
    LogFencedError,
    RecordLog,
    StorageUnavailableError,
)

log = logging.getLogger("groupcoord.log.delta")

BATCH_ID_KEY = "groupcoord.batch_id"
"""commitInfo key holding a batch's tag (read back by :meth:`DeltaRecordLog.batch_ids_after`)."""
EPOCH_KEY = "groupcoord.epoch"
"""commitInfo key holding the writer epoch of a batch."""
NO_SEGMENT = -1
"""``segment`` of the batches written before the first snapshot."""

LOG_SCHEMA = pa.schema(
    [
        pa.field("log_version", pa.int64(), nullable=False),
        pa.field("epoch", pa.int64(), nullable=False),
        pa.field("seq", pa.int32(), nullable=False),
        pa.field("kind", pa.string(), nullable=False),
        pa.field("key", pa.string(), nullable=False),
        pa.field("value", pa.binary(), nullable=True),
        pa.field("format_version", pa.int32(), nullable=False),
        pa.field("written_at", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("snapshot", pa.bool_(), nullable=False),
        pa.field("segment", pa.int64(), nullable=False),
    ]
)
"""The record log table's columns; ``segment`` is the partition column."""

_READ_COLUMNS = ["log_version", "epoch", "seq", "kind", "key", "value", "format_version", "snapshot"]


def table_properties(*, checkpoint_interval: int, retention_hours: int) -> dict[str, str]:
    """Delta table properties of groupcoord's tables: checkpoint interval and retention, protocol (1,2) only."""
    return {
        "delta.checkpointInterval": str(checkpoint_interval),
        "delta.logRetentionDuration": f"interval {retention_hours} hours",
        "delta.deletedFileRetentionDuration": f"interval {retention_hours} hours",
        "delta.enableExpiredLogCleanup": "true",
    }


@contextmanager
def classified_errors(action: str) -> Iterator[None]:
    """Translate delta-rs and I/O failures of ``action`` into the log's two failure classes."""
    try:
        yield
    except CommitFailedError as exc:
        raise LogFencedError(f"{action}: another writer committed first ({exc})") from exc
    except (OSError, DeltaError, pa.ArrowException) as exc:
        raise StorageUnavailableError(f"{action}: {exc}") from exc


def commit_properties(*, batch_id: str | None, epoch: int) -> CommitProperties:
    """Conditional-commit properties: no retries, and the batch tag and epoch in commitInfo."""
    metadata: dict[str, Any] = {EPOCH_KEY: epoch}
    if batch_id is not None:
        metadata[BATCH_ID_KEY] = batch_id
    return CommitProperties(max_commit_retries=0, custom_metadata=metadata)


class DeltaRecordLog(RecordLog):
    """A :class:`RecordLog` stored in the Delta table at ``path`` (usually ``StateRoot.log_path``).

    Not thread-safe: one writer thread at a time (the commit batcher guarantees it).
    """

    def __init__(self, path: str | Path, *, checkpoint_interval: int = 10, retention_hours: int = 168) -> None:
        self.path = Path(path)
        self.checkpoint_interval = checkpoint_interval
        self.retention_hours = retention_hours
        self._table: DeltaTable | None = None
        # The segment of the batch at _segment_version, so an append after it knows its partition without a scan.
        self._segment_version: int | None = None
        self._segment = NO_SEGMENT
        self.records_since_snapshot = 0

    # --- reading ------------------------------------------------------------------------------------------------

    def exists(self) -> bool:
        """True once the first batch created the table."""
        return DeltaTable.is_deltatable(str(self.path))

    def version(self) -> int:
        """The latest Delta version of the table, -1 when it does not exist yet."""
        with classified_errors(f"reading the version of {self.path}"):
            return self._latest().version() if self.exists() else -1

    def table(self) -> DeltaTable:
        """The table at its latest version (for maintenance and inspection)."""
        with classified_errors(f"opening {self.path}"):
            return self._latest()

    def batch_ids_after(self, version: int) -> dict[int, str | None]:
        """Batch tags of every commit after ``version``, read from the commits' commitInfo."""
        with classified_errors(f"reading the history of {self.path}"):
            if not self.exists():
                return {}
            table = DeltaTable(str(self.path))
            newer = table.version() - version
            if newer <= 0:
                return {}
            found: dict[int, str | None] = {}
            for entry in table.history(newer):
                if entry["version"] > version:
                    tag = entry.get(BATCH_ID_KEY)
                    found[int(entry["version"])] = None if tag is None else str(tag)
            return found

    def load(self) -> LoadedLog:
        """Read the newest segment (latest snapshot plus tail), in commit order, without epoch markers."""
        with classified_errors(f"loading {self.path}"):
            if not self.exists():
                self.records_since_snapshot = 0
                return LoadedLog((), -1)
            table = self._latest()
            version = table.version()
            segment = self._newest_segment(table)
            rows = table.to_pyarrow_table(filters=[("segment", "=", segment)], columns=_READ_COLUMNS)
        rows = rows.sort_by([("log_version", "ascending"), ("seq", "ascending")])
        epoch = int(pc.max(rows.column("epoch")).as_py() or 0) if rows.num_rows else 0
        control = pc.equal(rows.column("kind"), EPOCH_KIND)
        records = _to_records(rows.filter(pc.invert(control)))
        tail = int(pc.sum(pc.invert(pc.or_(rows.column("snapshot"), control))).as_py() or 0)
        self.epoch = max(self.epoch, epoch)
        self._segment, self._segment_version = segment, version
        self.records_since_snapshot = tail
        log.info("loaded %s at version %d: segment %d, %d records (%d after the snapshot), epoch %d",
                 self.path, version, segment, len(records), tail, epoch)
        return LoadedLog(records, version, epoch, tail)

    # --- writing ------------------------------------------------------------------------------------------------

    def append(self, records: Sequence[EncodedRecord], *, expected_version: int, batch_id: str | None = None) -> int:
        """Commit ``records`` as Delta version ``expected_version + 1``, or raise fenced/unavailable."""
        version = self._commit(records, expected_version=expected_version, batch_id=batch_id, snapshot=False)
        self.records_since_snapshot += sum(1 for r in records if r.kind != EPOCH_KIND)
        return version

    def write_snapshot(
        self, records: Sequence[EncodedRecord], *, expected_version: int, batch_id: str | None = None
    ) -> int:
        """Commit ``records`` as a snapshot opening a new segment at the new version."""
        version = self._commit(records, expected_version=expected_version, batch_id=batch_id, snapshot=True)
        self.records_since_snapshot = 0
        return version

    def note_external_commit(self, version: int) -> None:
        """Tell the log that its own maintenance committed ``version`` (the segment is unchanged)."""
        if self._segment_version is not None:
            self._segment_version = version

    def _commit(
        self, records: Sequence[EncodedRecord], *, expected_version: int, batch_id: str | None, snapshot: bool
    ) -> int:
        new_version = expected_version + 1
        action = f"appending version {new_version} to {self.path}"
        try:
            with classified_errors(action):
                if expected_version < 0:
                    return self._create(records, batch_id=batch_id, snapshot=snapshot)
                table = self._table_at(expected_version)
                segment = new_version if snapshot else self._segment_of(table, expected_version)
                data = self._rows(records, version=new_version, segment=segment, snapshot=snapshot)
                write_deltalake(
                    table,
                    data,
                    mode="append",
                    commit_properties=commit_properties(batch_id=batch_id, epoch=self.epoch),
                )
                committed = table.version()
        except BaseException:
            self._table = None  # its snapshot state is unknown after a failed write; reload next time
            raise
        if committed != new_version:
            raise LogFencedError(f"{action}: the commit landed at version {committed}")
        self._segment, self._segment_version = segment, committed
        return committed

    def _create(self, records: Sequence[EncodedRecord], *, batch_id: str | None, snapshot: bool) -> int:
        if self.exists():
            raise LogFencedError(f"expected an empty log, but {self.path} already has a table")
        segment = 0 if snapshot else NO_SEGMENT
        try:
            write_deltalake(
                str(self.path),
                self._rows(records, version=0, segment=segment, snapshot=snapshot),
                mode="error",
                partition_by=["segment"],
                name="groupcoord_record_log",
                configuration=table_properties(
                    checkpoint_interval=self.checkpoint_interval, retention_hours=self.retention_hours
                ),
                commit_properties=commit_properties(batch_id=batch_id, epoch=self.epoch),
            )
        except DeltaError as exc:
            if not isinstance(exc, CommitFailedError) and self.exists():
                raise LogFencedError(f"another writer created {self.path} first") from exc
            raise
        self._segment, self._segment_version = segment, 0
        self._table = None
        return 0

    def _rows(self, records: Sequence[EncodedRecord], *, version: int, segment: int, snapshot: bool) -> pa.Table:
        count = len(records)
        now = dt.datetime.now(dt.UTC)
        return pa.Table.from_arrays(
            [
                pa.array([version] * count, pa.int64()),
                pa.array([self.epoch] * count, pa.int64()),
                pa.array(range(count), pa.int32()),
                pa.array([r.kind for r in records], pa.string()),
                pa.array([r.key for r in records], pa.string()),
                pa.array([r.value for r in records], pa.binary()),
                pa.array([r.format_version for r in records], pa.int32()),
                pa.array([now] * count, pa.timestamp("us", tz="UTC")),
                pa.array([snapshot] * count, pa.bool_()),
                pa.array([segment] * count, pa.int64()),
            ],
            schema=LOG_SCHEMA,
        )

    # --- table state --------------------------------------------------------------------------------------------

    def _latest(self) -> DeltaTable:
        if self._table is None:
            self._table = DeltaTable(str(self.path))
        else:
            self._table.update_incremental()
        return self._table

    def _table_at(self, version: int) -> DeltaTable:
        """The table as of ``version``: the read snapshot of a conditional commit at ``version + 1``."""
        if self._table is None:
            self._table = DeltaTable(str(self.path))
        if self._table.version() != version:
            latest = self._table.version()
            try:
                self._table.load_as_version(version)
            except DeltaError as exc:
                if version > latest:
                    self._table.update_incremental()
                    if self._table.version() < version:
                        raise LogFencedError(
                            f"expected log version {version}, but {self.path} is only at {self._table.version()}"
                        ) from exc
                    self._table.load_as_version(version)
                else:
                    raise
        return self._table

    def _segment_of(self, table: DeltaTable, version: int) -> int:
        if self._segment_version == version:
            return self._segment
        return self._newest_segment(table)

    @staticmethod
    def _newest_segment(table: DeltaTable) -> int:
        actions = pa.table(table.get_add_actions(flatten=True))
        if actions.num_rows == 0:
            return NO_SEGMENT
        return int(pc.max(actions.column("partition.segment")).as_py())


def _to_records(rows: pa.Table) -> tuple[EncodedRecord, ...]:
    kinds = rows.column("kind").to_pylist()
    keys = rows.column("key").to_pylist()
    values = rows.column("value").to_pylist()
    formats = rows.column("format_version").to_pylist()
    return tuple(map(EncodedRecord, kinds, keys, values, formats))
