"""Record-log maintenance, run by the lease holder on a timer (``log.maintenance.interval.ms``).

Maintenance commits take Delta versions of the log, so they must run in the commit batcher's slot. The expensive
part, rewriting closed segments' many small files, does not need the slot: a closed segment never changes again, so
its compacted file can be written while appends go on, and only the commit that swaps the files in (a few
milliseconds) waits for the slot. :func:`maintain_record_log` does both; the holder's timer calls::

    version = await maintain_record_log(batcher, log)

(``batcher.run_exclusive(functools.partial(maintain_log, log))`` still works, compacting everything inside the slot;
with a minute's worth of commits at 20 per second that held the slot for ~1-1.5 s on the benchmark machine, a stall
every acknowledgement arriving meanwhile waits for.)

Steps in the slot, each a conditional commit right after the previous one, so a concurrent writer fences it like any
append:

1. **Prepared compaction** (:func:`prepare_compaction`, outside the slot): one file per closed segment, rows in
   ``(log_version, seq)`` order, committed as ``remove`` + ``add`` actions with ``dataChange: false``. Skipped when
   a file it replaces is no longer live.
2. **Retention**: a closed segment is dropped once the snapshot that superseded it is older than
   ``history.retention.hours`` (a whole-partition delete: files are removed, never rewritten).
3. **Compaction** of what is left with delta-rs (the current segment, and closed segments when nothing was
   prepared). The current segment matters: a load reads all of its files, and at a low commit rate a segment
   collects thousands of one-commit files before the next snapshot (1,500 files took ~5 s to load on the
   benchmark machine; one file takes milliseconds). Loads order rows by ``(log_version, seq)``, so rewriting files
   changes nothing they return.
4. **Vacuum** (full) of files unreferenced for longer than the retention.
5. A **checkpoint** at the new version and **clean-up** of Delta log entries older than the retention.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import itertools
import logging
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from deltalake import CommitProperties, DeltaTable

from groupcoord.log.base import LogFencedError
from groupcoord.log.batcher import CommitBatcher
from groupcoord.log.delta import FILE_SCHEMA, DeltaRecordLog, classified_errors
from groupcoord.log.delta_append import commit_actions, remove_action, write_data_file

log = logging.getLogger("groupcoord.log.maintenance")

_NO_RETRY = CommitProperties(max_commit_retries=0)


@dataclass(frozen=True)
class MaintenanceReport:
    """What one maintenance run did, and the log version it ended at."""

    version: int
    dropped_segments: tuple[int, ...]
    compacted_files: int
    vacuumed_files: int


@dataclass(frozen=True)
class PreparedCompaction:
    """Closed segments already rewritten into one file each (outside the commit slot), waiting to be committed.

    ``actions`` removes every replaced file and adds the new ones; ``replaced`` lists the replaced files' paths.
    """

    segments: tuple[int, ...]
    replaced: frozenset[str]
    actions: tuple[dict[str, Any], ...]


async def maintain_record_log(batcher: CommitBatcher, record_log: DeltaRecordLog, *,
                              retention_hours: int | None = None) -> int:
    """Prepare the closed segments' compaction in a thread, then run :func:`maintain_log` with it in the commit
    slot; returns the log version after maintenance."""
    prepared = await asyncio.to_thread(prepare_compaction, record_log)
    return await batcher.run_exclusive(functools.partial(
        maintain_log, record_log, retention_hours=retention_hours, prepared=prepared))


def prepare_compaction(record_log: DeltaRecordLog, *, min_files: int = 2) -> PreparedCompaction | None:
    """Rewrite every closed segment holding at least ``min_files`` files into one new file (not yet committed).

    Safe to run while the writer appends: appends only touch the current segment, and only maintenance removes
    files. Files of a preparation that is never committed are left for vacuum.
    """
    with classified_errors(f"preparing the compaction of {record_log.path}"):
        if not record_log.exists():
            return None
        table = DeltaTable(str(record_log.path))
        files = pa.table(table.get_add_actions(flatten=True))
        if files.num_rows == 0:
            return None
        segment_of = files.column("partition.segment")
        current = pc.max(segment_of).as_py()
        counts = files.group_by("partition.segment").aggregate([("path", "count")])
        closed = sorted(int(seg) for seg, n in zip(counts.column("partition.segment").to_pylist(),
                                                   counts.column("path_count").to_pylist(), strict=True)
                        if seg != current and n >= min_files)
        if not closed:
            return None
        actions: list[dict[str, Any]] = []
        replaced: set[str] = set()
        for segment in closed:
            mine = files.filter(pc.equal(segment_of, segment))
            paths = mine.column("path").to_pylist()
            for path, size in zip(paths, mine.column("size_bytes").to_pylist(), strict=True):
                actions.append(remove_action({"path": path, "size": size,
                                              "partitionValues": {"segment": str(segment)}}))
                replaced.add(path)
            # The segment's own files, read directly (data files never hold the partition column).
            parts = [pq.read_table(record_log.path / path, columns=FILE_SCHEMA.names).cast(FILE_SCHEMA)
                     for path in paths]
            rows = pa.concat_tables(parts).sort_by([("log_version", "ascending"), ("seq", "ascending")])
            add = write_data_file(record_log.path, rows, partition={"segment": str(segment)}, data_change=False,
                                  fsync=record_log.fsync)
            actions.append({"add": add})
    return PreparedCompaction(tuple(closed), frozenset(replaced), tuple(actions))


def maintain_log(
    record_log: DeltaRecordLog,
    expected_version: int,
    *,
    retention_hours: int | None = None,
    now: dt.datetime | None = None,
    prepared: PreparedCompaction | None = None,
) -> int:
    """Run every maintenance step on ``record_log`` at ``expected_version``; returns the new version.

    The signature fits :meth:`CommitBatcher.run_exclusive`. See :func:`run_log_maintenance` for the report.
    """
    return run_log_maintenance(
        record_log, expected_version, retention_hours=retention_hours, now=now, prepared=prepared
    ).version


def run_log_maintenance(
    record_log: DeltaRecordLog,
    expected_version: int,
    *,
    retention_hours: int | None = None,
    now: dt.datetime | None = None,
    prepared: PreparedCompaction | None = None,
) -> MaintenanceReport:
    """Prepared compaction, retention, compaction, vacuum, checkpoint and log clean-up (see the module docs)."""
    hours = record_log.retention_hours if retention_hours is None else retention_hours
    now = now or dt.datetime.now(dt.UTC)
    with classified_errors(f"maintaining {record_log.path}"):
        if expected_version < 0:
            return MaintenanceReport(expected_version, (), 0, 0)
        table = DeltaTable(str(record_log.path))
        _expect(table, expected_version)
        compacted = 0
        if prepared is not None and prepared.replaced <= _live_paths(table):
            commit_actions(record_log.path, expected_version + 1, list(prepared.actions), fsync=record_log.fsync,
                           info={"operation": "OPTIMIZE", "operationParameters": {
                               "segments": ",".join(map(str, prepared.segments))}})
            _expect(table, expected_version := expected_version + 1)
            compacted = len(prepared.replaced)
        elif prepared is not None:
            log.info("skipping a prepared compaction: files it replaces were removed meanwhile")
        segments = _segment_starts(table)
        cutoff = now - dt.timedelta(hours=hours)
        ordered = sorted(segments)
        dropped = tuple(s for s, successor in itertools.pairwise(ordered) if segments[successor] < cutoff)
        if dropped:
            table.delete(f"segment <= {max(dropped)}", commit_properties=_NO_RETRY)
            _expect(table, expected_version := expected_version + 1)
        if _files(table) > len(segments) - len(dropped):  # some kept segment has more than one file
            metrics = table.optimize.compact(commit_properties=_NO_RETRY)
            removed = int(metrics.get("numFilesRemoved", 0))
            if removed:
                _expect(table, expected_version := expected_version + 1)
                compacted += removed
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


def _live_paths(table: DeltaTable) -> set[str]:
    return set(pa.table(table.get_add_actions(flatten=True)).column("path").to_pylist())


def _files(table: DeltaTable) -> int:
    return len(table.file_uris())
