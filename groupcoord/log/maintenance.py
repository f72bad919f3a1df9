"""Record-log maintenance, run by the lease holder on a timer (``log.maintenance.interval.ms``).

Maintenance commits take Delta versions of the log, so it must run in the commit batcher's slot::

    version = await batcher.run_exclusive(functools.partial(maintain_log, log, retention_hours=168))

Steps, each a conditional commit (``max_commit_retries=0``) right after the previous one, so a concurrent writer
fences it like any append:

1. **Retention**: a closed segment is dropped once the snapshot that superseded it is older than
   ``history.retention.hours`` (a whole-partition delete: files are removed, never rewritten).
2. **Compaction**: every segment's many small per-commit files are bin-packed into few files, so the table's file
   list (and every snapshot of it) stays short. This includes the current segment: a load reads all of its files,
   and at a low commit rate a segment can collect thousands of one-commit files before the next snapshot (1,500
   files took ~5 s to load on the benchmark machine; one file takes milliseconds). Loads order rows by
   ``(log_version, seq)``, so rewriting files changes nothing they return.
3. **Vacuum** of files unreferenced for longer than the retention.
4. A **checkpoint** at the new version and **clean-up** of Delta log entries older than the retention.

Maintenance runs in the commit slot, so no append races the compaction of the current segment.
"""

from __future__ import annotations

import datetime as dt
import itertools
import logging
from dataclasses import dataclass

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable

from groupcoord.log.base import LogFencedError
from groupcoord.log.delta import DeltaRecordLog, classified_errors

log = logging.getLogger("groupcoord.log.maintenance")

_NO_RETRY = CommitProperties(max_commit_retries=0)


@dataclass(frozen=True)
class MaintenanceReport:
    """What one maintenance run did, and the log version it ended at."""

    version: int
    dropped_segments: tuple[int, ...]
    compacted_files: int
    vacuumed_files: int


def maintain_log(
    record_log: DeltaRecordLog,
    expected_version: int,
    *,
    retention_hours: int | None = None,
    now: dt.datetime | None = None,
) -> int:
    """Run every maintenance step on ``record_log`` at ``expected_version``; returns the new version.

    The signature fits :meth:`CommitBatcher.run_exclusive`. See :func:`run_log_maintenance` for the report.
    """
    return run_log_maintenance(
        record_log, expected_version, retention_hours=retention_hours, now=now
    ).version


def run_log_maintenance(
    record_log: DeltaRecordLog,
    expected_version: int,
    *,
    retention_hours: int | None = None,
    now: dt.datetime | None = None,
) -> MaintenanceReport:
    """Retention, compaction, vacuum, checkpoint and log clean-up of the record log (see the module docs)."""
    hours = record_log.retention_hours if retention_hours is None else retention_hours
    now = now or dt.datetime.now(dt.UTC)
    with classified_errors(f"maintaining {record_log.path}"):
        if expected_version < 0:
            return MaintenanceReport(expected_version, (), 0, 0)
        table = DeltaTable(str(record_log.path))
        _expect(table, expected_version)
        segments = _segment_starts(table)
        cutoff = now - dt.timedelta(hours=hours)
        ordered = sorted(segments)
        dropped = tuple(s for s, successor in itertools.pairwise(ordered) if segments[successor] < cutoff)
        if dropped:
            table.delete(f"segment <= {max(dropped)}", commit_properties=_NO_RETRY)
            _expect(table, expected_version := expected_version + 1)
        compacted = 0
        if _files(table) > len(segments) - len(dropped):  # some kept segment has more than one file
            metrics = table.optimize.compact(commit_properties=_NO_RETRY)
            compacted = int(metrics.get("numFilesRemoved", 0))
            if compacted:
                _expect(table, expected_version := expected_version + 1)
        before = table.version()
        vacuumed = table.vacuum(hours, dry_run=False, enforce_retention_duration=False, commit_properties=_NO_RETRY,
                                full=True)  # lite vacuum misses files removed before the latest checkpoint
        _expect(table, expected_version := expected_version + (table.version() - before))
        table.create_checkpoint()
        table.cleanup_metadata()
    record_log.note_external_commit(expected_version)
    report = MaintenanceReport(expected_version, dropped, compacted, len(vacuumed))
    log.info("record log maintenance: %s", report)
    return report


def _expect(table: DeltaTable, version: int) -> None:
    table.update_incremental()
    if table.version() != version:
        raise LogFencedError(f"log is at version {table.version()} during maintenance, expected {version}")


def _segment_starts(table: DeltaTable) -> dict[int, dt.datetime]:
    """Each segment and the time its first row was written (its snapshot's time)."""
    actions = pa.table(table.get_add_actions(flatten=True))
    grouped = actions.group_by("partition.segment").aggregate([("min.written_at", "min")])
    return {
        int(segment): start
        for segment, start in zip(
            grouped.column("partition.segment").to_pylist(),
            grouped.column("min.written_at_min").to_pylist(),
            strict=True,
        )
    }


def _files(table: DeltaTable) -> int:
    return len(table.file_uris())
