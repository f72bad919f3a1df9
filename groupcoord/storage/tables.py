"""Opening, creating and reading the local Delta tables of a state root, and the properties they are created with.

Reads go through pyarrow's native local filesystem rather than delta-rs's default Python filesystem handler: with
the default handler, a process that scanned a table sometimes aborts at interpreter exit ("terminate called without
an active exception", exit code 134), a known delta-rs/pyarrow shutdown-order problem. State roots are always local,
so the native filesystem is both safe and faster. Partition values and per-file statistics still prune the scan.
Every reader of a state-root table (record log, lease, catalog, topic logs, materialized tables) goes through
:func:`local_dataset`.

:func:`compact_table` is delta-rs's file maintenance (compaction, full vacuum, checkpoint), which the materialized
state tables use; the two logs have their own (:mod:`groupcoord.storage.maintenance`). It keeps the table on
protocol (1,2): delta-rs's compaction rewrites files, it never adds deletion vectors or table features.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pa_fs
from deltalake import CommitProperties, DeltaTable
from deltalake.exceptions import CommitFailedError, DeltaError

log = logging.getLogger("groupcoord.storage.tables")

FilterTuple = tuple[str, str, object]

_COMPACTION_RETRIES = 3
"""delta-rs may retry a compaction commit: its conflict check refuses it if a rewritten file was removed meanwhile,
and concurrent appends (new files) do not invalidate a compaction."""


@dataclass(frozen=True)
class CompactionReport:
    """What :func:`compact_table` did to one table."""

    path: str
    files_before: int
    files_removed: int
    files_added: int
    files_vacuumed: int
    version: int


def table_properties(*, checkpoint_interval: int, retention_hours: int = 0, retention_minutes: int = 0
                     ) -> dict[str, str]:
    """Delta table properties of groupcoord's tables: checkpoint interval and retention (``retention_hours`` or,
    for the record log, ``retention_minutes``), protocol (1,2) only."""
    retention = f"interval {retention_minutes} minutes" if retention_minutes else f"interval {retention_hours} hours"
    return {
        "delta.checkpointInterval": str(checkpoint_interval),
        "delta.logRetentionDuration": retention,
        "delta.deletedFileRetentionDuration": retention,
        "delta.enableExpiredLogCleanup": "true",
    }


def open_or_create(path: Path, schema: pa.Schema, *, partition_by: list[str] | None = None,
                   name: str | None = None, description: str | None = None) -> DeltaTable:
    """Open the Delta table at ``path``, creating it empty with ``schema`` first if it does not exist yet.

    Two processes may race to create it: the loser's create fails because version 0 exists, and it opens the
    winner's table instead. Tables are created on protocol (1,2) (no deletion vectors, no column mapping).
    """
    if not DeltaTable.is_deltatable(str(path)):
        path.mkdir(parents=True, exist_ok=True)
        try:
            DeltaTable.create(str(path), schema, mode="ignore", partition_by=partition_by, name=name,
                              description=description)
        except (CommitFailedError, DeltaError):
            if not DeltaTable.is_deltatable(str(path)):
                raise
    return DeltaTable(str(path))


def open_if_exists(path: Path) -> DeltaTable | None:
    """The Delta table at ``path``, or ``None`` when there is none yet."""
    return DeltaTable(str(path)) if DeltaTable.is_deltatable(str(path)) else None


def local_dataset(table: DeltaTable, *, where: list[FilterTuple] | None = None) -> ds.Dataset:
    """The table's current version as a pyarrow dataset on the native local filesystem.

    ``where`` prunes files by partition values and by min/max statistics (it selects files, not rows: filter the
    rows again when reading).
    """
    root = pa_fs.SubTreeFileSystem(_local_path(table), pa_fs.LocalFileSystem())
    return table.to_pyarrow_dataset(filesystem=root, file_pruning_predicate=where)


def _local_path(table: DeltaTable) -> str:
    uri = table.table_uri
    return uri.removeprefix("file://") if uri.startswith("file://") else uri


def compact_table(path: Path, *, retention_hours: int, min_files: int = 2, target_size: int | None = None,
                  checkpoint: bool = True) -> CompactionReport | None:
    """Compact, vacuum and checkpoint the Delta table at ``path`` (``None`` if there is no table).

    Compaction runs only when the table has at least ``min_files`` data files; ``target_size`` (bytes) overrides
    delta-rs's default target file size. Files superseded more than ``retention_hours`` ago are vacuumed.
    Concurrent writers stay correct: their conditional commits lose to the compaction commit and retry.
    """
    if not DeltaTable.is_deltatable(str(path)):
        return None
    table = DeltaTable(str(path))
    before = len(table.file_uris())
    removed = added = 0
    if before >= min_files:
        metrics = table.optimize.compact(
            target_size=target_size,
            commit_properties=CommitProperties(max_commit_retries=_COMPACTION_RETRIES),
        )
        removed, added = int(metrics.get("numFilesRemoved", 0)), int(metrics.get("numFilesAdded", 0))
    # A full vacuum: the default ("lite") one only sees files removed since the latest checkpoint, so files
    # removed before one would never be deleted. Unreferenced files younger than the retention are kept, which
    # protects a concurrent writer's data file that is not committed yet (for any retention above its commit time).
    vacuumed = table.vacuum(retention_hours, dry_run=False, enforce_retention_duration=False, full=True,
                            commit_properties=CommitProperties(max_commit_retries=_COMPACTION_RETRIES))
    if checkpoint:
        table.update_incremental()
        table.create_checkpoint()
        table.cleanup_metadata()
    report = CompactionReport(str(path), before, removed, added, len(vacuumed), table.version())
    log.info("compacted %s: %d files, %d rewritten into %d, %d vacuumed, version %d", path, before, removed, added,
             len(vacuumed), report.version)
    return report
