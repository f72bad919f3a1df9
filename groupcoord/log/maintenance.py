"""Record-log maintenance: :mod:`groupcoord.storage.maintenance` with the record log's policy, run by the holder on
its timer (``log.maintenance.interval.ms``).

The policy (:func:`policy`): the partitions are the segments, and only the :data:`KEPT_SEGMENTS` newest stay live
(a load reads the newest; the one before is a margin), so every older segment is dropped as soon as a newer snapshot
supersedes it; each kept segment's files, the current one's included, are compacted into one file, rows in
``(log_version, seq)`` order; removed files and Delta log entries are kept for ``log.retention.minutes`` (default
10), not ``history.retention.hours``: the log is the coordinator's write-ahead log, and the queryable,
time-travelling history of offsets, groups and assignments lives in the materialized state tables. A reader that
opened an older log version (a new holder loading while the old one still writes) has the whole window to read its
files. ``docs/state-tables.md`` ("Why the record log's maintenance looks like this") gives the measurements behind
this.

Where the steps run (:func:`maintain_record_log`): planning and garbage collection in a low-priority thread,
outside the commit slot; the commit in the batcher's commit slot (:meth:`CommitBatcher.run_exclusive`), one
conditional commit of a few milliseconds, fenced like an append. The holder is the log's only writer, so it knows
every removal: a plan made before a later maintenance commit removed files is stale and skipped.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import functools
import logging
import time
from collections.abc import Callable, Iterator

from groupcoord.log.batcher import CommitBatcher
from groupcoord.log.delta import FILE_SCHEMA, DeltaRecordLog, classified_errors
from groupcoord.storage import maintenance
from groupcoord.storage.background import background_executor
from groupcoord.storage.maintenance import MaintenancePlan, MaintenanceReport, Policy

log = logging.getLogger("groupcoord.log.maintenance")

KEPT_SEGMENTS = 2
"""Segments kept live: the newest (what a load reads) and the one before it."""
SLOW_STEP = dt.timedelta(seconds=30)
"""A maintenance step taking longer than this is logged as a warning (the default interval is a minute)."""
_BACKGROUND = background_executor("groupcoord-log-maintenance")
"""Planning and garbage collection run here, at a lower priority than the acknowledgement path."""

STEPS = ("plan", "slot", "collect")
"""A run's steps, in order: planning (thread), waiting for the commit slot and committing in it, collecting
garbage (thread). :func:`maintain_record_log` reports which one is under way and how long each took."""


def policy(record_log: DeltaRecordLog, *, min_files: int = 2) -> Policy:
    """The record log's maintenance policy (see the module docs)."""
    return Policy(partition_column="segment", file_schema=FILE_SCHEMA, sort_by=("log_version", "seq"),
                  retention=record_log.retention, keep_newest=KEPT_SEGMENTS, min_files=min_files,
                  fsync=record_log.fsync, properties=record_log.properties())


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
                log.warning("record log maintenance: step %r of %s took %.1f s", name, record_log.location, steps[name])

    with step("plan"):
        plan = await loop.run_in_executor(_BACKGROUND, plan_maintenance, record_log)
    version, committed = batcher.version, False

    def commit(expected: int) -> int:
        nonlocal committed
        assert plan is not None
        new = commit_plan(record_log, plan, expected)
        committed = new != expected
        return new

    with step("slot"):
        if plan is not None and not plan.empty:
            version = await batcher.run_exclusive(commit)
    with step("collect"):
        vacuumed = await loop.run_in_executor(_BACKGROUND, functools.partial(collect_garbage, record_log, now=now))
    return maintenance.report(record_log.location, version, plan, vacuumed, committed=committed, steps=steps)


def run_log_maintenance(record_log: DeltaRecordLog, expected_version: int, *,
                        now: dt.datetime | None = None) -> MaintenanceReport:
    """Every step at once, for a writer that holds the log itself (tests, tools): plan, commit at
    ``expected_version`` (:class:`LogFencedError` if someone else committed), collect garbage."""
    plan = plan_maintenance(record_log)
    version = expected_version
    if plan is not None and not plan.empty:
        version = commit_plan(record_log, plan, expected_version)
    return maintenance.report(record_log.location, version, plan, collect_garbage(record_log, now=now),
                              committed=version != expected_version)


def maintain_log(record_log: DeltaRecordLog, expected_version: int, *, now: dt.datetime | None = None) -> int:
    """:func:`run_log_maintenance` returning the new version: fits :meth:`CommitBatcher.run_exclusive`."""
    return run_log_maintenance(record_log, expected_version, now=now).version


def plan_maintenance(record_log: DeltaRecordLog, *, min_files: int = 2) -> MaintenancePlan | None:
    """Drop the segments older than the :data:`KEPT_SEGMENTS` newest, and write one compacted file for each kept
    segment holding at least ``min_files`` files (not yet committed; an uncommitted file is garbage later)."""
    with classified_errors(f"planning the maintenance of {record_log.location}"):
        return maintenance.plan_maintenance(record_log.location, policy(record_log, min_files=min_files))


def commit_plan(record_log: DeltaRecordLog, plan: MaintenancePlan, expected_version: int) -> int:
    """Commit ``plan`` right after ``expected_version`` (in the commit slot); returns the new version.

    A plan made before files were removed by a later maintenance commit is stale and skipped (its files become
    garbage); anything else can only have added files since the plan, so its removes are still valid.
    """
    if plan.base_version < record_log.removals_at:
        log.info("skipping a maintenance plan made at version %d: files were removed at version %d",
                 plan.base_version, record_log.removals_at)
        return expected_version
    with classified_errors(f"maintaining {record_log.location}"):
        version = maintenance.commit_plan(record_log.location, plan, expected_version, fsync=record_log.fsync)
    record_log.note_external_commit(version, removed_files=bool(plan.replaced))
    return version


def collect_garbage(record_log: DeltaRecordLog, *, now: dt.datetime | None = None) -> int:
    """Delete expired Delta log entries and unreferenced data files, outside the commit slot; returns the data
    files deleted (:func:`groupcoord.storage.maintenance.collect_garbage`'s rule, within the log retention)."""
    with classified_errors(f"collecting garbage in {record_log.location}"):
        return maintenance.collect_garbage(record_log.location, policy(record_log), now=now)
