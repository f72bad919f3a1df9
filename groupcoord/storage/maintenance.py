"""Log maintenance, written once for both logs: drop what a log no longer needs, compact small files, collect garbage.

Every commit of a log adds small files, and every reader pays for each live file, each tombstone and each log entry.
Maintenance keeps them bounded in three steps, each a function here, so a log can run them where it must:

1. **Plan** (:func:`plan_maintenance`, off the write path): read the live files; *drop* every partition older than
   the :attr:`Policy.keep_newest` newest (``remove`` actions; the record log keeps two segments), and *compact* the
   files of each kept partition: consecutive small files (in the order of their first :attr:`Policy.sort_by`
   column) are rewritten into files of up to :attr:`Policy.target_file_bytes`, rows sorted by
   :attr:`Policy.sort_by`, with their statistics (written now, committed in step 2). Both are safe while writers
   append: appends only ever add files, and only maintenance removes files.
2. **Commit** (:func:`commit_plan`): one conditional commit of the removes and adds at a given version, through
   :mod:`groupcoord.storage.files` (a rival commit at that version is a :class:`CommitConflictError`). A log with one
   writer commits in its commit slot (the record log); a log with many writers commits at the version after the
   newest, again after each lost race, for as long as no other maintenance removed a planned file since the plan
   (:func:`commit_plan_when_valid`, the topic logs). Table properties the policy wants are set first, once.
3. **Collect garbage** (:func:`collect_garbage`, off the write path): Delta log entries older than the table's log
   retention (``cleanup_metadata``), then data files that no version inside :attr:`Policy.retention` references.
   This is our own vacuum: delta-rs's commits ``VACUUM START``/``END`` versions, which a log with a commit slot
   cannot afford, and its full mode lists more.

A compaction changes no data (``dataChange`` false on its actions); dropping a partition does.

Tables are local directories or S3 prefixes (:class:`~groupcoord.storage.location.TableLocation`): files are read,
listed and deleted through pyarrow's filesystem of the table (:func:`~groupcoord.storage.tables.table_filesystem`),
and a file's age is its modification time there (on S3, the object's last-modified time).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pa_fs
import pyarrow.parquet as pq
from deltalake import CommitProperties
from deltalake.exceptions import DeltaError

from groupcoord.storage.commits import commit_name
from groupcoord.storage.files import CommitConflictError, commit_actions, remove_action, write_data_file
from groupcoord.storage.tables import Where, is_table, open_table, table_filesystem

log = logging.getLogger("groupcoord.storage.maintenance")

WRITE_GUARD = dt.timedelta(minutes=2)
"""How long before its commit a data file may have been written (a prepared compaction, a slow append): garbage
collection never deletes a file younger than the retention cutoff minus this."""
_NO_RETRY = CommitProperties(max_commit_retries=0)


@dataclass(frozen=True, kw_only=True)
class Policy:
    """What maintenance keeps of one log table, and how it compacts it.

    ``partition_column`` names the table's (integer) partition column; ``file_schema`` the columns of its data files
    (all but the partition column), which a compacted file is written with (columns a file lacks, written by an
    older format, read as nulls); ``sort_by`` the row order of a compacted file. ``keep_newest``: only the newest so
    many partitions stay live (``None``: every partition). ``target_file_bytes``: compaction bin-packs files smaller
    than this into files up to it (``None``: all of a partition's files into one); a bin needs ``min_files`` files.
    ``retention``: how long removed files stay for readers of older versions. ``properties``: table properties
    maintenance sets once if the table lacks them.
    """

    partition_column: str
    file_schema: pa.Schema
    sort_by: tuple[str, ...]
    retention: dt.timedelta
    keep_newest: int | None = None
    target_file_bytes: int | None = None
    min_files: int = 2
    compression: str = "zstd"
    fsync: bool = True
    properties: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class MaintenancePlan:
    """Removes and adds prepared off the write path, waiting for :func:`commit_plan`.

    ``base_version`` is the table version the plan was made at; ``dropped`` the partitions it removes whole;
    ``compacted`` the number of files it replaces by ``added`` files; ``replaced`` every file it removes;
    ``properties`` the table properties to set first (empty when the table has them already).
    """

    base_version: int
    dropped: tuple[int, ...]
    compacted: int
    added: int
    replaced: frozenset[str]
    actions: tuple[dict[str, Any], ...]
    properties: dict[str, str]

    @property
    def empty(self) -> bool:
        """True when there is nothing to commit."""
        return not self.actions and not self.properties


@dataclass(frozen=True)
class MaintenanceReport:
    """What one maintenance run did to the table at ``path``: the version it ended at, the partitions it dropped,
    the files compaction replaced and added, the data files garbage collection deleted, and the seconds each step
    took (``step_seconds``, when the caller timed them)."""

    path: str
    version: int
    dropped: tuple[int, ...] = ()
    compacted_files: int = 0
    added_files: int = 0
    vacuumed_files: int = 0
    step_seconds: Mapping[str, float] = field(default_factory=dict)


def report(path: Where, version: int, plan: MaintenancePlan | None, vacuumed: int, *, committed: bool = True,
           steps: Mapping[str, float] | None = None) -> MaintenanceReport:
    """The report of a run that committed ``plan`` (or skipped it: ``committed`` false) and collected ``vacuumed``
    data files, logged at INFO."""
    done = plan if plan is not None and committed else None
    result = MaintenanceReport(str(path), version, done.dropped if done else (), done.compacted if done else 0,
                               done.added if done else 0, vacuumed, dict(steps or {}))
    log.info("maintenance of %s at version %d: %d partitions dropped, %d files compacted into %d, %d vacuumed; "
             "seconds per step %s", path, version, len(result.dropped), result.compacted_files, result.added_files,
             vacuumed, result.step_seconds)
    return result


# --- 1. plan ------------------------------------------------------------------------------------------------------

def plan_maintenance(path: Where, policy: Policy) -> MaintenancePlan | None:
    """Drop the partitions older than the policy's newest ones, and write the compacted files of the kept ones (not
    yet committed: an uncommitted file is garbage later). ``None`` when there is no table."""
    if not is_table(path):
        return None
    table = open_table(path)
    files = pa.table(table.get_add_actions(flatten=True))
    configured = table.metadata().configuration
    properties = {k: v for k, v in policy.properties.items() if configured.get(k) != v}
    actions: list[dict[str, Any]] = []
    replaced: set[str] = set()
    column = f"partition.{policy.partition_column}"
    partitions = sorted({int(p) for p in files.column(column).to_pylist()}) if files.num_rows else []
    dropped = tuple(partitions[:-policy.keep_newest]) if policy.keep_newest else ()
    compacted = added = 0
    for partition in partitions:
        mine = files.filter(pc.equal(files.column(column), partition))
        paths, sizes = mine.column("path").to_pylist(), mine.column("size_bytes").to_pylist()
        if partition in dropped:
            bins: list[list[int]] = []
            for path_, size in zip(paths, sizes, strict=True):
                actions.append(_remove(path_, size, policy, partition, data_change=True))
                replaced.add(path_)
        else:
            bins = _bins(mine, policy)
        for members in bins:
            for i in members:
                actions.append(_remove(paths[i], sizes[i], policy, partition, data_change=False))
                replaced.add(paths[i])
            actions.append({"add": _compacted_file(path, policy, partition, [paths[i] for i in members])})
            compacted += len(members)
            added += 1
    return MaintenancePlan(table.version(), dropped, compacted, added, frozenset(replaced), tuple(actions),
                           properties)


def _bins(files: pa.Table, policy: Policy) -> list[list[int]]:
    """Runs of consecutive small files of one partition (in the order of the first sort column) to rewrite as one
    file each: every file below the target joins the current run while the run stays within the target; a file at
    or above it stays as it is. Runs shorter than ``min_files`` are left alone."""
    first = f"min.{policy.sort_by[0]}"
    order = list(range(files.num_rows))
    if first in files.column_names:
        starts = files.column(first).to_pylist()
        order.sort(key=lambda i: (starts[i] is None, starts[i] if starts[i] is not None else 0))
    sizes = files.column("size_bytes").to_pylist()
    target = policy.target_file_bytes
    runs: list[list[int]] = [[]]
    total = 0
    for i in order:
        if target is not None and sizes[i] >= target:
            runs.append([])
            total = 0
            continue
        if target is not None and runs[-1] and total + sizes[i] > target:
            runs.append([])
            total = 0
        runs[-1].append(i)
        total += sizes[i]
    return [run for run in runs if len(run) >= max(policy.min_files, 2)]


def _remove(path: str, size: int, policy: Policy, partition: int, *, data_change: bool) -> dict[str, Any]:
    return remove_action({"path": path, "size": size, "partitionValues": {policy.partition_column: str(partition)}},
                         data_change=data_change)


def _compacted_file(table_path: Where, policy: Policy, partition: int, paths: list[str]) -> dict[str, Any]:
    """Write the rows of ``paths`` (files of one partition) as one file, sorted; returns its add action."""
    # Read directly: data files never hold the partition column, and no table scan is needed.
    fs = table_filesystem(table_path)
    rows = pa.concat_tables([_read_file(fs, path, policy.file_schema) for path in paths])
    rows = rows.sort_by([(name, "ascending") for name in policy.sort_by])
    return write_data_file(table_path, rows, partition={policy.partition_column: str(partition)},
                           compression=policy.compression, data_change=False, fsync=policy.fsync)


def _read_file(fs: pa_fs.FileSystem, path: str, schema: pa.Schema) -> pa.Table:
    """The rows of the data file ``path`` of ``fs`` in ``schema``: columns the file lacks (an older format's) are
    nulls."""
    parquet = pq.ParquetFile(fs.open_input_file(path))
    rows = parquet.read(columns=[name for name in schema.names if name in parquet.schema_arrow.names])
    for missing in (f for f in schema if f.name not in rows.column_names):
        rows = rows.append_column(missing.name, pa.nulls(rows.num_rows, missing.type))
    return rows.select(schema.names).cast(schema)


# --- 2. commit ----------------------------------------------------------------------------------------------------

def commit_plan(path: Where, plan: MaintenancePlan, expected_version: int, *, fsync: bool = True) -> int:
    """Commit ``plan`` right after ``expected_version``; returns the new version. Raises
    :class:`CommitConflictError` when another writer committed that version first.

    The caller makes sure the plan is still valid: no file it removes was removed since ``plan.base_version``
    (appends only add files, so they never invalidate it).
    """
    version = expected_version
    if plan.properties:  # once per table: a conditional delta-rs commit, refused like any other rival
        table = open_table(path)
        if table.version() != version:
            raise CommitConflictError(f"{path} is at version {table.version()} during maintenance, expected "
                                      f"{version}")
        table.alter.set_table_properties(dict(plan.properties), commit_properties=_NO_RETRY)
        version += 1
    if plan.actions:
        version += 1
        commit_actions(path, version, list(plan.actions), fsync=fsync, info={
            "operation": "OPTIMIZE",
            "operationParameters": {"droppedPartitions": ",".join(map(str, plan.dropped))},
        })
    return version


def commit_plan_when_valid(path: Where, plan: MaintenancePlan, *, fsync: bool, deadline_s: float = 30.0
                           ) -> int | None:
    """Commit ``plan`` at the version after the newest, for a table with many writers: after a lost race, again at
    the next one, until ``deadline_s``. Returns the new version, or ``None`` when the plan went stale (a file it
    removes was removed since it was made: another maintenance run got there first) or the deadline passed; its
    compacted files are then garbage."""
    deadline = time.monotonic() + deadline_s
    checked = plan.base_version
    while time.monotonic() < deadline:
        newest = _newest_version(path, after=checked)
        if not plan.replaced.isdisjoint(removed_files(path, checked, newest)):
            log.info("skipping a maintenance plan of %s made at version %d: a planned file was removed since", path,
                     plan.base_version)
            return None
        checked = newest
        try:
            return commit_plan(path, plan, newest, fsync=fsync)
        except CommitConflictError:
            continue  # a writer committed meanwhile: look at what it did, and try after it
    log.warning("gave up committing a maintenance plan of %s: writers kept committing first", path)
    return None


def removed_files(path: Where, after: int, upto: int) -> set[str]:
    """The data files removed by the commits ``after + 1`` .. ``upto`` of the table at ``path``."""
    removed: set[str] = set()
    fs = table_filesystem(path)
    for version in range(after + 1, upto + 1):
        with fs.open_input_stream(commit_name(version)) as commit:
            text = commit.read().decode("utf-8")
        for line in text.splitlines():
            action = json.loads(line) if line.strip() else {}
            if "remove" in action:
                removed.add(action["remove"]["path"])
    return removed


def _newest_version(path: Where, *, after: int) -> int:
    """The newest committed version, looking forward from ``after`` (a known version) one commit file at a time."""
    fs = table_filesystem(path)
    version = after
    while fs.get_file_info(commit_name(version + 1)).type != pa_fs.FileType.NotFound:
        version += 1
    return version


# --- 3. garbage ---------------------------------------------------------------------------------------------------

def collect_garbage(path: Where, policy: Policy, *, now: dt.datetime | None = None) -> int:
    """Delete expired Delta log entries and unreferenced data files; returns the data files deleted.

    The rule: let ``cutoff`` be now minus the retention and ``V`` the oldest version committed after it (the oldest
    version a reader may still time-travel to). A data file is deleted only if it is live neither now nor at ``V``,
    and was written before ``cutoff`` minus :data:`WRITE_GUARD`. Any file live at some version between ``V`` and
    now is live at ``V``, or live now, or was added after ``V``; and a file added after ``V`` was written at most
    the guard before its commit, which came after ``cutoff``. When the policy drops partitions, the empty
    directories of partitions older than every live one are removed too (no writer adds files there again).
    """
    now = now or dt.datetime.now(dt.UTC)
    cutoff = (now - policy.retention).timestamp()
    if not is_table(path):
        return 0
    table = open_table(path)
    table.cleanup_metadata()
    reference = _oldest_version_after(path, cutoff)
    keep = set(pa.table(table.get_add_actions(flatten=True)).column("path").to_pylist())
    if reference is not None and reference < table.version():
        try:
            old = open_table(path, version=reference)
        except (OSError, DeltaError) as exc:  # not reconstructable: be safe, delete nothing this time
            log.warning("garbage collection skipped: version %d of %s is unreadable (%s)", reference, path, exc)
            return 0
        keep.update(pa.table(old.get_add_actions(flatten=True)).column("path").to_pylist())
    return _delete_unreferenced(path, policy, keep, written_before=cutoff - WRITE_GUARD.total_seconds())


def _oldest_version_after(path: Where, cutoff: float) -> int | None:
    """The oldest version whose commit file was written after ``cutoff`` (epoch seconds), or ``None``."""
    oldest: int | None = None
    for entry in table_filesystem(path).get_file_info(pa_fs.FileSelector("_delta_log")):
        name = entry.base_name
        if len(name) == 25 and name.endswith(".json") and name[:20].isdigit():
            version = int(name[:20])
            if (oldest is None or version < oldest) and _mtime(entry) > cutoff:
                oldest = version
    return oldest


def _mtime(entry: pa_fs.FileInfo) -> float:
    """When the file of ``entry`` was last modified (epoch seconds; 0 when the filesystem does not say)."""
    return entry.mtime.timestamp() if entry.mtime is not None else 0.0


def _delete_unreferenced(root: Where, policy: Policy, keep: set[str], *, written_before: float) -> int:
    prefix = f"{policy.partition_column}="
    live = [n for n in (_partition_number(p.split("/", 1)[0], prefix) for p in keep) if n is not None]
    lowest_live = min(live, default=None) if policy.keep_newest else None
    deleted = 0
    fs = table_filesystem(root)
    directories = [entry.base_name for entry in fs.get_file_info(pa_fs.FileSelector(""))
                   if entry.type == pa_fs.FileType.Directory and entry.base_name.startswith(prefix)]
    for directory in directories:
        files = [entry for entry in fs.get_file_info(pa_fs.FileSelector(directory))
                 if entry.base_name.endswith(".parquet")]
        remaining = len(files)
        for entry in files:
            if f"{directory}/{entry.base_name}" not in keep and _mtime(entry) < written_before:
                fs.delete_file(f"{directory}/{entry.base_name}")
                deleted += 1
                remaining -= 1
        number = _partition_number(directory, prefix)
        if remaining == 0 and lowest_live is not None and number is not None and number < lowest_live:
            with contextlib.suppress(OSError):
                if not fs.get_file_info(pa_fs.FileSelector(directory)):  # a stray file: leave it
                    fs.delete_dir(directory)
    return deleted


def _partition_number(directory: str, prefix: str) -> int | None:
    if not directory.startswith(prefix):
        return None
    try:
        return int(directory[len(prefix):])
    except ValueError:
        return None
