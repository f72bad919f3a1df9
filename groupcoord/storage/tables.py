"""Opening, creating and reading the Delta tables of a state root, and the properties they are created with.

Tables are named by a :class:`~groupcoord.storage.location.TableLocation` (a local directory or an ``s3://``
prefix with its storage options); :func:`open_table`, :func:`is_table` and :func:`open_or_create` pass the options
to delta-rs. Reads go through pyarrow's native filesystems (local, or S3) rather than delta-rs's default Python
filesystem handler: with the default handler, a process that scanned a table sometimes aborts at interpreter exit
("terminate called without an active exception", exit code 134), a known delta-rs/pyarrow shutdown-order problem.
Partition values and per-file statistics still prune the scan. Every reader of a state-root table (record log,
lease, catalog, topic logs, materialized tables) goes through :func:`table_dataset`.

:func:`compact_table` is delta-rs's file maintenance (compaction, full vacuum, checkpoint), which the materialized
state tables use; the two logs have their own (:mod:`groupcoord.storage.maintenance`). It keeps the table on
protocol (1,2): delta-rs's compaction rewrites files, it never adds deletion vectors or table features.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pa_fs
from deltalake import CommitProperties, DeltaTable
from deltalake.exceptions import CommitFailedError, DeltaError

from groupcoord.storage import objects
from groupcoord.storage.commits import commit_id_of, commit_name
from groupcoord.storage.location import TableLocation, as_location

log = logging.getLogger("groupcoord.storage.tables")

FilterTuple = tuple[str, str, object]
Where = str | Path | TableLocation
"""A table's location as callers give it: a local path, or a :class:`TableLocation`."""

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


def is_table(where: Where) -> bool:
    """True if a Delta table exists at ``where``."""
    location = as_location(where)
    if not location.is_local:
        return objects.holds_delta_log(location)
    return bool(DeltaTable.is_deltatable(location.uri))


def open_table(where: Where, *, version: int | None = None) -> DeltaTable:
    """The Delta table at ``where`` (at ``version``, or the latest), opened with the location's storage options."""
    location = as_location(where)
    return DeltaTable(location.uri, version=version, storage_options=location.delta_options())


def open_or_create(where: Where, schema: pa.Schema, *, partition_by: list[str] | None = None,
                   name: str | None = None, description: str | None = None) -> DeltaTable:
    """Open the Delta table at ``where``, creating it empty with ``schema`` first if it does not exist yet.

    Two processes may race to create it: the loser's create fails because version 0 exists, and it opens the
    winner's table instead. Tables are created on protocol (1,2) (no deletion vectors, no column mapping).
    """
    location = as_location(where)
    if not is_table(location):
        if location.is_local:
            location.local_path.mkdir(parents=True, exist_ok=True)
        try:
            DeltaTable.create(location.uri, schema, mode="ignore", partition_by=partition_by, name=name,
                              description=description, storage_options=location.delta_options())
        except (CommitFailedError, DeltaError):
            if not is_table(location):
                raise
    return open_table(location)


def open_if_exists(where: Where) -> DeltaTable | None:
    """The Delta table at ``where``, or ``None`` when there is none yet."""
    return open_table(where) if is_table(where) else None


def table_dataset(table: DeltaTable, *, where: list[FilterTuple] | None = None) -> ds.Dataset:
    """The table's current version as a pyarrow dataset on pyarrow's native filesystem (local, or S3 with the
    storage options the table was opened with).

    ``where`` prunes files by partition values and by min/max statistics (it selects files, not rows: filter the
    rows again when reading).
    """
    return table.to_pyarrow_dataset(filesystem=filesystem_of(table), file_pruning_predicate=where)


def filesystem_of(table: DeltaTable) -> pa_fs.FileSystem:
    """pyarrow's filesystem rooted at an open table (local, or S3 with the storage options it was opened with)."""
    uri = table.table_uri
    location = TableLocation(local_path_of(table)) if uri.startswith("file://") or "://" not in uri else \
        TableLocation(uri, getattr(table, "_storage_options", None) or {})
    return table_filesystem(location)


def holds_commit(where: Where, version: int, commit_id: str) -> bool:
    """True if version ``version`` of the table at ``where`` is the commit tagged ``commit_id`` (its
    ``groupcoord.commitId``): a writer whose commit failed as a conflict asks this to tell its own commit, whose
    response was lost, from a rival's."""
    try:
        with table_filesystem(where).open_input_stream(commit_name(version)) as commit:
            return commit_id_of(commit.read()) == commit_id
    except FileNotFoundError:
        return False


def table_filesystem(where: Where) -> pa_fs.FileSystem:
    """pyarrow's filesystem rooted at the table (local, or S3 with the location's options): its data files and
    Delta log entries by their paths relative to the table."""
    location = as_location(where)
    if location.is_local:
        return pa_fs.SubTreeFileSystem(location.uri, pa_fs.LocalFileSystem())
    bucket, key = location.bucket_and_key
    return pa_fs.SubTreeFileSystem(f"{bucket}/{key}", _s3_filesystem(tuple(sorted(location.options.items()))))


PYARROW_S3_ATTEMPTS = 11
"""Retries of pyarrow's S3 client (the AWS SDK's default strategy: 25 ms doubling each time): about 25 s in all,
the same budget as delta-rs's and obstore's (:data:`groupcoord.storage.location.RETRY_TIMEOUT_S`)."""


@functools.lru_cache(maxsize=8)
def _s3_filesystem(options: tuple[tuple[str, str], ...]) -> pa_fs.S3FileSystem:
    """pyarrow's S3 filesystem for delta-rs style storage options (one per options, kept for the process)."""
    found = dict(options)
    endpoint = found.get("aws_endpoint")
    return pa_fs.S3FileSystem(
        access_key=found.get("aws_access_key_id"), secret_key=found.get("aws_secret_access_key"),
        session_token=found.get("aws_session_token"), region=found.get("aws_region"),
        endpoint_override=urlsplit(endpoint).netloc if endpoint else None,
        scheme=urlsplit(endpoint).scheme if endpoint else "https",
        retry_strategy=pa_fs.AwsDefaultS3RetryStrategy(max_attempts=PYARROW_S3_ATTEMPTS))


def local_path_of(table: DeltaTable) -> str:
    """The directory of a local table. delta-rs names it by a ``file://`` URI, percent-encoded (a space is ``%20``):
    decoded here, or a root under a directory with a space in its name reads files that do not exist."""
    uri = table.table_uri
    return unquote(uri.removeprefix("file://")) if uri.startswith("file://") else uri


def compact_table(path: Where, *, retention_hours: int, min_files: int = 2, target_size: int | None = None,
                  checkpoint: bool = True) -> CompactionReport | None:
    """Compact, vacuum and checkpoint the Delta table at ``path`` (``None`` if there is no table).

    Compaction runs only when the table has at least ``min_files`` data files; ``target_size`` (bytes) overrides
    delta-rs's default target file size. Files superseded more than ``retention_hours`` ago are vacuumed.
    Concurrent writers stay correct: their conditional commits lose to the compaction commit and retry.
    """
    if not is_table(path):
        return None
    table = open_table(path)
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
