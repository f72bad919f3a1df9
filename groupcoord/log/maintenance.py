"""Record-log maintenance, run by the lease holder on a timer (``log.maintenance.interval.ms``).

Why it looks like this. At the commit target (20 commits/s, a snapshot about every second) the log creates ~72,000
data files and ~3,600 segments an hour. The first design kept every superseded segment for
``history.retention.hours`` (168 h) and ran compaction, a full vacuum and a checkpoint inside the commit slot. A
30-minute run then showed acknowledgement p99 drifting from 0.3 s to seconds; profiling the growing table
(``bench/commit_throughput.py --sustained``) found three costs growing with the run's age, not with the state:

- the *live* file set: one compacted file per superseded segment, kept for 168 h (3,600 more per hour), read by
  every table open, ``get_add_actions``, checkpoint and compaction;
- the *tombstones*: every removed file stays a ``remove`` action in each checkpoint for
  ``delta.deletedFileRetentionDuration`` (168 h: 12 million at steady state), so the background checkpoint every
  10 commits, each table open and ``cleanup_metadata`` grew without bound;
- the files on disk and the ``_delta_log`` entries, listed by every full vacuum and metadata clean-up.

What maintenance does now, so that every cost is bounded by the state and ``log.retention.minutes``:

1. **Plan** (:func:`plan_maintenance`, in a thread, outside the commit slot). Every segment older than the one
   before the newest is *dropped* (``remove`` actions: a load reads only the newest segment, and the previous one
   is kept as a margin); each kept segment holding several files, the current one included, is *compacted* into
   one file written now, rows in ``(log_version, seq)`` order. Both are safe while the writer appends: appends
   only ever add files, to the newest segment, and only maintenance removes files.
2. **Commit** (:func:`commit_plan`, in the commit slot): one conditional commit of the removes and adds, which a
   rival writer fences like any append; a few milliseconds. A table created with other retention properties
   (an older version of groupcoord) gets them set once, in the same slot.
3. **Collect garbage** (:func:`collect_garbage`, in a thread, outside the slot): Delta log entries older than the
   log retention (``cleanup_metadata``, behind the background checkpoints), then data files that no version
   inside the retention window references (:func:`collect_garbage` explains the rule). This is our own vacuum:
   delta-rs's commits ``VACUUM START``/``END`` versions, which would need the slot, and its full mode lists more.

The record log's Delta history (time travel to older log versions) is therefore kept for ``log.retention.minutes``
(default 10), not ``history.retention.hours``: the log is the coordinator's write-ahead log, and the queryable,
time-travelling history of offsets, groups and assignments lives in the materialized state tables, which keep
``history.retention.hours``. A reader that opened an older log version (a new holder loading while the old one
still writes) has the whole window to read its files.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import functools
import logging
import os
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from deltalake import CommitProperties, DeltaTable
from deltalake.exceptions import DeltaError

from groupcoord.log.base import LogFencedError
from groupcoord.log.batcher import CommitBatcher
from groupcoord.log.delta import FILE_SCHEMA, DeltaRecordLog, classified_errors
from groupcoord.storage.background import background_executor
from groupcoord.storage.files import commit_actions, remove_action, write_data_file

log = logging.getLogger("groupcoord.log.maintenance")

_NO_RETRY = CommitProperties(max_commit_retries=0)
WRITE_GUARD = dt.timedelta(minutes=2)
"""How long before its commit a data file may have been written (a prepared compaction, a slow append): garbage
collection never deletes a file younger than the retention cutoff minus this."""
KEPT_SEGMENTS = 2
"""Segments kept live: the newest (what a load reads) and the one before it."""
SLOW_STEP = dt.timedelta(seconds=30)
"""A maintenance step taking longer than this is logged as a warning (the default interval is a minute)."""
_BACKGROUND = background_executor("groupcoord-log-maintenance")
"""Planning and garbage collection run here, at a lower priority than the acknowledgement path."""


STEPS = ("plan", "slot", "collect")
"""A run's steps, in order: planning (thread), waiting for the commit slot and committing in it, collecting
garbage (thread). :func:`maintain_record_log` reports which one is under way and how long each took."""


@dataclass(frozen=True)
class MaintenanceReport:
    """What one maintenance run did, the log version it ended at, and the seconds each of its :data:`STEPS` took
    (``step_seconds``; empty for :func:`run_log_maintenance`)."""

    version: int
    dropped_segments: tuple[int, ...]
    compacted_files: int
    vacuumed_files: int
    step_seconds: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class MaintenancePlan:
    """Removes and adds prepared outside the commit slot, waiting for :func:`commit_plan`.

    ``base_version`` is the log version the plan was made at; ``dropped`` the segments it removes whole;
    ``compacted`` the number of files it replaces by one per segment; ``replaced`` every file it removes;
    ``properties`` the table properties to set first (empty when the table has them already).
    """

    base_version: int
    dropped: tuple[int, ...]
    compacted: int
    replaced: frozenset[str]
    actions: tuple[dict[str, Any], ...]
    properties: dict[str, str]

    @property
    def empty(self) -> bool:
        """True when there is nothing to commit."""
        return not self.actions and not self.properties


async def maintain_record_log(batcher: CommitBatcher, record_log: DeltaRecordLog, *,
                              now: dt.datetime | None = None,
                              on_step: Callable[[str], None] | None = None) -> MaintenanceReport:
    """Plan in a thread, commit the plan in the batcher's commit slot, then collect garbage in a thread.

    ``on_step`` is called with each step's name (:data:`STEPS`) as it starts, so a caller can tell which step a
    run that does not finish is in; the report holds each step's duration, and a step slower than
    :data:`SLOW_STEP` is logged as a warning when it ends.
    """
    loop = asyncio.get_running_loop()
    steps: dict[str, float] = {}

    @contextlib.contextmanager
    def step(name: str) -> Iterator[None]:
        if on_step is not None:
            on_step(name)
        started = time.monotonic()
        try:
            yield
        finally:
            steps[name] = round(time.monotonic() - started, 3)
            if steps[name] > SLOW_STEP.total_seconds():
                log.warning("record log maintenance: step %r of %s took %.1f s", name, record_log.path, steps[name])

    with step("plan"):
        plan = await loop.run_in_executor(_BACKGROUND, plan_maintenance, record_log)
    version = batcher.version
    with step("slot"):
        if plan is not None and not plan.empty:
            version = await batcher.run_exclusive(lambda expected: commit_plan(record_log, plan, expected))
    with step("collect"):
        vacuumed = await loop.run_in_executor(_BACKGROUND, functools.partial(collect_garbage, record_log, now=now))
    return _report(version, plan, vacuumed, steps)


def run_log_maintenance(record_log: DeltaRecordLog, expected_version: int, *,
                        now: dt.datetime | None = None) -> MaintenanceReport:
    """Every step at once, for a writer that holds the log itself (tests, tools): plan, commit at
    ``expected_version`` (:class:`LogFencedError` if someone else committed), collect garbage."""
    plan = plan_maintenance(record_log)
    version = expected_version
    if plan is not None and not plan.empty:
        version = commit_plan(record_log, plan, expected_version)
    return _report(version, plan, collect_garbage(record_log, now=now))


def maintain_log(record_log: DeltaRecordLog, expected_version: int, *, now: dt.datetime | None = None) -> int:
    """:func:`run_log_maintenance` returning the new version: fits :meth:`CommitBatcher.run_exclusive`."""
    return run_log_maintenance(record_log, expected_version, now=now).version


def _report(version: int, plan: MaintenancePlan | None, vacuumed: int,
            steps: Mapping[str, float] | None = None) -> MaintenanceReport:
    report = MaintenanceReport(version, plan.dropped if plan else (), plan.compacted if plan else 0, vacuumed,
                               dict(steps or {}))
    log.info("record log maintenance at version %d: %d segments dropped, %d files compacted, %d vacuumed; "
             "seconds per step %s", version, len(report.dropped_segments), report.compacted_files, vacuumed,
             report.step_seconds)
    return report


# --- 1. plan ------------------------------------------------------------------------------------------------------

def plan_maintenance(record_log: DeltaRecordLog, *, min_files: int = 2) -> MaintenancePlan | None:
    """Drop the segments older than the :data:`KEPT_SEGMENTS` newest, and write one compacted file for each kept
    segment holding at least ``min_files`` files (not yet committed; an uncommitted file is garbage later)."""
    with classified_errors(f"planning the maintenance of {record_log.path}"):
        if not record_log.exists():
            return None
        table = DeltaTable(str(record_log.path))
        files = pa.table(table.get_add_actions(flatten=True))
        wanted = record_log.properties()
        configured = table.metadata().configuration
        properties = {k: v for k, v in wanted.items() if configured.get(k) != v}
        actions: list[dict[str, Any]] = []
        replaced: set[str] = set()
        segments = sorted({int(s) for s in files.column("partition.segment").to_pylist()}) if files.num_rows else []
        dropped = tuple(segments[:-KEPT_SEGMENTS])
        compacted = 0
        for segment in segments:
            mine = files.filter(pc.equal(files.column("partition.segment"), segment))
            paths = mine.column("path").to_pylist()
            if segment not in dropped and len(paths) < min_files:
                continue
            for path, size in zip(paths, mine.column("size_bytes").to_pylist(), strict=True):
                actions.append(remove_action({"path": path, "size": size,
                                              "partitionValues": {"segment": str(segment)}},
                                             data_change=segment in dropped))
                replaced.add(path)
            if segment not in dropped:
                actions.append({"add": _compacted_file(record_log, segment, paths)})
                compacted += len(paths)
    return MaintenancePlan(table.version(), dropped, compacted, frozenset(replaced), tuple(actions), properties)


def _compacted_file(record_log: DeltaRecordLog, segment: int, paths: list[str]) -> dict[str, Any]:
    """Write the rows of ``paths`` (one segment's files) as one file; returns its add action."""
    # Read directly: data files never hold the partition column, and no table scan is needed.
    parts = [pq.read_table(record_log.path / path, columns=FILE_SCHEMA.names).cast(FILE_SCHEMA) for path in paths]
    rows = pa.concat_tables(parts).sort_by([("log_version", "ascending"), ("seq", "ascending")])
    return write_data_file(record_log.path, rows, partition={"segment": str(segment)}, data_change=False,
                           fsync=record_log.fsync)


# --- 2. commit ----------------------------------------------------------------------------------------------------

def commit_plan(record_log: DeltaRecordLog, plan: MaintenancePlan, expected_version: int) -> int:
    """Commit ``plan`` right after ``expected_version`` (in the commit slot); returns the new version.

    A plan made before files were removed by a later maintenance commit is stale and skipped (its files become
    garbage); anything else can only have added files since the plan, so its removes are still valid.
    """
    if plan.base_version < record_log.removals_at:
        log.info("skipping a maintenance plan made at version %d: files were removed at version %d",
                 plan.base_version, record_log.removals_at)
        return expected_version
    version = expected_version
    with classified_errors(f"maintaining {record_log.path}"):
        if plan.properties:  # once per table: a conditional delta-rs commit, fenced like an append
            table = DeltaTable(str(record_log.path))
            if table.version() != version:
                raise LogFencedError(f"log is at version {table.version()} during maintenance, expected {version}")
            table.alter.set_table_properties(plan.properties, commit_properties=_NO_RETRY)
            version += 1
        if plan.actions:
            version += 1
            commit_actions(record_log.path, version, list(plan.actions), fsync=record_log.fsync, info={
                "operation": "OPTIMIZE",
                "operationParameters": {"droppedSegments": ",".join(map(str, plan.dropped))},
            })
    record_log.note_external_commit(version, removed_files=bool(plan.replaced))
    return version


# --- 3. garbage ---------------------------------------------------------------------------------------------------

def collect_garbage(record_log: DeltaRecordLog, *, now: dt.datetime | None = None) -> int:
    """Delete expired Delta log entries and unreferenced data files, outside the commit slot; returns the data
    files deleted.

    The rule: let ``cutoff`` be now minus the log retention and ``V`` the oldest version committed after it (the
    oldest version a reader may still time-travel to). A data file is deleted only if it is live neither now nor
    at ``V``, and was written before ``cutoff`` minus :data:`WRITE_GUARD`. Any file live at some version between
    ``V`` and now is live at ``V``, or live now, or was added after ``V``; and a file added after ``V`` was
    written at most the guard before its commit, which came after ``cutoff``. Empty directories of segments
    older than every live one are removed too (no writer adds files there again).
    """
    now = now or dt.datetime.now(dt.UTC)
    cutoff = (now - record_log.retention).timestamp()
    with classified_errors(f"collecting garbage in {record_log.path}"):
        if not record_log.exists():
            return 0
        table = DeltaTable(str(record_log.path))
        table.cleanup_metadata()
        reference = _oldest_version_after(record_log.path, cutoff)
        keep = set(pa.table(table.get_add_actions(flatten=True)).column("path").to_pylist())
        if reference is not None and reference < table.version():
            try:
                old = DeltaTable(str(record_log.path), version=reference)
            except (OSError, DeltaError) as exc:  # not reconstructable: be safe, delete nothing this time
                log.warning("garbage collection skipped: version %d of %s is unreadable (%s)", reference,
                            record_log.path, exc)
                return 0
            keep.update(pa.table(old.get_add_actions(flatten=True)).column("path").to_pylist())
        live_segments = {path.split("/", 1)[0] for path in keep}
        return _delete_unreferenced(record_log.path, keep, live_segments,
                                    written_before=cutoff - WRITE_GUARD.total_seconds())


def _oldest_version_after(path: Path, cutoff: float) -> int | None:
    """The oldest version whose commit file was written after ``cutoff`` (epoch seconds), or ``None``."""
    oldest: int | None = None
    with os.scandir(path / "_delta_log") as entries:
        for entry in entries:
            name = entry.name
            if len(name) == 25 and name.endswith(".json") and name[:20].isdigit():
                version = int(name[:20])
                if (oldest is None or version < oldest) and entry.stat().st_mtime > cutoff:
                    oldest = version
    return oldest


def _delete_unreferenced(root: Path, keep: set[str], live_segments: set[str], *, written_before: float) -> int:
    numbers = [n for n in map(_segment_number, live_segments) if n is not None]
    lowest_live = min(numbers, default=None)
    deleted = 0
    with os.scandir(root) as partitions:
        directories = [entry for entry in partitions if entry.is_dir() and entry.name.startswith("segment=")]
    for directory in directories:
        with os.scandir(directory.path) as entries:
            files = [entry for entry in entries if entry.name.endswith(".parquet")]
        remaining = len(files)
        for entry in files:
            if f"{directory.name}/{entry.name}" not in keep and entry.stat().st_mtime < written_before:
                os.unlink(entry.path)
                deleted += 1
                remaining -= 1
        number = _segment_number(directory.name)
        if remaining == 0 and lowest_live is not None and number is not None and number < lowest_live:
            with contextlib.suppress(OSError):  # not empty after all (a stray file): leave it
                os.rmdir(directory.path)
    return deleted


def _segment_number(directory: str) -> int | None:
    try:
        return int(directory.split("=", 1)[1])
    except (IndexError, ValueError):
        return None
