"""Topic-log maintenance: :mod:`groupcoord.storage.maintenance` with a topic log's policy, on the holder's timer.

Every produce commits one small file per touched partition, so a busy topic log accumulates thousands of files, and
every reader (offsets from statistics, fetches) pays for each one. The policy (:func:`policy`): nothing is dropped
(records are never deleted in this version: a partition's log starts at offset 0); the small files of each
partition are compacted into files of up to :data:`TARGET_FILE_BYTES`, consecutive in offset order and rows sorted
by offset, so per-file ``offset`` statistics stay tight and offsets are untouched; removed files stay for
``history.retention.hours``. Like every topic-log commit, maintenance's is not fsynced.

A topic log has many writers and no commit slot: producers keep producing while maintenance plans, and its commit
goes at the version after the newest. Maintenance and producers race for versions as any two writers do, and the
loser tries the next one: a producer re-reads and renumbers, maintenance checks that no other maintenance removed a
file it planned to replace (:func:`~groupcoord.storage.maintenance.commit_plan_when_valid`). The topic log then gets
a checkpoint if it has none at its latest version.

Run it off the event loop, e.g. ``await asyncio.to_thread(maintain_topic_logs, root, retention_hours=168)``. The work
itself runs on a background thread of its own at a lower scheduling priority
(:func:`~groupcoord.storage.background.background_executor`): compacting a busy topic log reads and rewrites
thousands of files, and on a machine short of cores it must not take them from Produce's commits.
"""

from __future__ import annotations

import datetime as dt
import json
import logging

import pyarrow as pa
from deltalake.exceptions import DeltaError

from groupcoord.state_root import StateRoot
from groupcoord.storage import maintenance
from groupcoord.storage.background import background_executor
from groupcoord.storage.maintenance import MaintenanceReport, Policy
from groupcoord.storage.tables import Where, open_table, table_filesystem
from groupcoord.topics.catalog import TopicCatalog
from groupcoord.topics.log_table import PARTITION_COLUMNS, TOPIC_LOG_SCHEMA
from groupcoord.topics.topic_log import COMPRESSION

log = logging.getLogger("groupcoord.topics.maintenance")

TARGET_FILE_BYTES = 100 * 1024 * 1024
"""Compaction writes files of up to this size (delta-rs's default target)."""
FILE_SCHEMA = TOPIC_LOG_SCHEMA.remove(TOPIC_LOG_SCHEMA.get_field_index(PARTITION_COLUMNS[0]))
"""The columns of a topic log's data files (all but the partition column)."""


def policy(*, retention_hours: int, min_files: int = 2) -> Policy:
    """A topic log's maintenance policy (see the module docs)."""
    return Policy(partition_column=PARTITION_COLUMNS[0], file_schema=FILE_SCHEMA, sort_by=("offset",),
                  retention=dt.timedelta(hours=retention_hours), target_file_bytes=TARGET_FILE_BYTES,
                  min_files=min_files, compression=COMPRESSION, fsync=False)


_BACKGROUND = background_executor("groupcoord-topic-maintenance")
"""The lower-priority thread topic-log maintenance runs on (started at its first use)."""


def maintain_topic_logs(root: StateRoot, *, retention_hours: int, min_files: int = 2,
                        now: dt.datetime | None = None) -> list[MaintenanceReport]:
    """Compact, checkpoint and collect the garbage of the log of every topic in the catalog; a report per topic log.

    A topic whose maintenance fails (an I/O error, a table it cannot read) is logged and skipped; the next run
    retries it. Blocks until done; the work runs on the background thread (see the module docs).
    """
    return _BACKGROUND.submit(_maintain_all, root, retention_hours=retention_hours, min_files=min_files,
                              now=now).result()


def _maintain_all(root: StateRoot, *, retention_hours: int, min_files: int,
                  now: dt.datetime | None) -> list[MaintenanceReport]:
    reports: list[MaintenanceReport] = []
    rules = policy(retention_hours=retention_hours, min_files=min_files)
    for topic in TopicCatalog(root).list():
        try:
            report = maintain_topic_log(root.topic_path(topic.name), rules, now=now)
        except (DeltaError, OSError, pa.ArrowException) as exc:
            log.warning("maintenance of topic log %s failed, will retry: %s", topic.name, exc)
            continue
        if report is not None:
            reports.append(report)
    return reports


def maintain_topic_log(path: Where, rules: Policy, *, now: dt.datetime | None = None) -> MaintenanceReport | None:
    """Every step on one topic log (``None`` when it has no table)."""
    plan = maintenance.plan_maintenance(path, rules)
    if plan is None:
        return None
    version: int | None = plan.base_version
    if not plan.empty:
        version = maintenance.commit_plan_when_valid(path, plan, fsync=rules.fsync)
    committed = version is not None and version != plan.base_version
    table = open_table(path)
    if table.version() > _last_checkpoint(path):
        table.create_checkpoint()
    vacuumed = maintenance.collect_garbage(path, rules, now=now)
    return maintenance.report(path, table.version() if version is None else version, plan, vacuumed,
                              committed=committed)


def _last_checkpoint(path: Where) -> int:
    try:
        with table_filesystem(path).open_input_stream("_delta_log/_last_checkpoint") as marker:
            return int(json.loads(marker.read())["version"])
    except (OSError, ValueError, KeyError):
        return -1
