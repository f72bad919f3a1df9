"""The Delta file writer: data files and conditional commits of a local Delta table, in constant time.

Both logs append through here (the record log and the topic logs), and their maintenance commits through here too.
A commit is written as the Delta protocol's two pieces:

1. data files, Parquet files under their partition's Hive-style directory (partition columns are not stored in the
   file, as the protocol requires), with per-column statistics in their add actions so readers keep pruning
   (:func:`write_data_file`, :func:`file_stats`);
2. the commit ``_delta_log/<version>.json`` (``commitInfo``, then the actions), created with the protocol's mutual
   exclusion for local storage: the commit is written to a temporary file and then *hard-linked* to its final name,
   which fails if that version already exists (:func:`commit_actions`). Exactly one writer wins each version, and a
   reader never sees a partial commit. A loser gets :class:`CommitConflictError` and nothing of it is committed.

No in-memory table state is read or updated, so a commit costs the same whatever the table's size. With ``fsync``,
the data files, their directory entries and the commit file are fsynced before the commit is linked (concurrently:
they have no order among them, and concurrent fsyncs share journal commits), and the log directory after, so a
commit that returns is durable. Without it, a commit that returns is visible to every process and survives the
writing process, and the page cache holds it until the OS writes it. Table creation, metadata changes and
checkpoints stay with delta-rs.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ENGINE_INFO = "groupcoord-delta-append"
"""``engineInfo`` of the commits written here (delta-rs writes its own name there)."""

_STATS_TYPES = (pa.types.is_integer, pa.types.is_boolean, pa.types.is_timestamp)
_SYNC_POOL = ThreadPoolExecutor(2, thread_name_prefix="groupcoord-fsync")
"""Runs the fsyncs a commit can wait for concurrently (see the module docs)."""


class CommitConflictError(Exception):
    """The version a commit meant to create exists already (another writer committed first), or the version before
    it does not (the writer's idea of the table is wrong): nothing of this commit was committed."""


@dataclass(frozen=True)
class Part:
    """The rows of one partition, without the partition columns, and that partition's values (``{}``: the table
    is not partitioned)."""

    rows: pa.Table
    partition: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class FileAppend:
    """One append as Delta ``version``: one data file per part of ``parts``, committed together.

    ``commit_info`` holds extra top-level ``commitInfo`` keys (the batch tag, the epoch, the operation that wrote
    it); ``partition_by`` is the table's partition column list, recorded in the operation parameters as delta-rs
    does.
    """

    version: int
    parts: tuple[Part, ...]
    partition_by: tuple[str, ...] = ()
    commit_info: Mapping[str, Any] = field(default_factory=dict)
    compression: str = "zstd"
    written: tuple[Mapping[str, Any], ...] = ()
    """Add actions of data files written (and fsynced with their directories) before, committed ahead of this
    append's own files in the same commit (a snapshot's file written ahead of its commit slot)."""


def commit_path(table_path: Path, version: int) -> Path:
    """Where the commit of ``version`` lives."""
    return table_path / "_delta_log" / f"{version:020d}.json"


def split_by_partition(rows: pa.Table, column: str) -> tuple[Part, ...]:
    """``rows``, sorted by the partition column ``column``, as one :class:`Part` per partition value."""
    values = rows.column(column)
    data = rows.drop_columns([column])
    parts, start = [], 0
    for entry in pc.value_counts(values).to_pylist():
        count = int(entry["counts"])
        parts.append(Part(data.slice(start, count), {column: str(entry["values"])}))
        start += count
    return tuple(parts)


def append_file(table_path: Path, append: FileAppend, *, fsync: bool = True,
                phases: dict[str, float] | None = None) -> None:
    """Write each part of ``append`` as one data file and commit them as version ``append.version`` of the table.

    Raises :class:`CommitConflictError` if that version already exists, or if the previous version does not (the
    caller's idea of the table is wrong); any :class:`OSError` or Arrow error means storage trouble, and then
    nothing was committed (orphaned data files may be left for garbage collection). ``phases``, when given,
    receives the seconds spent in ``write`` (the Parquet files), ``sync`` (the concurrent fsyncs before the link)
    and ``link`` (link and log-directory fsync).
    """
    started = time.perf_counter()
    _check_log(table_path, append.version)
    info = {
        "operation": "WRITE",
        "operationParameters": {"mode": "Append", "partitionBy": json.dumps(list(append.partition_by))},
        "isBlindAppend": True,
        **append.commit_info,
    }
    actions = [{"add": dict(add)} for add in append.written]
    sync_first: list[Path] = []
    for part in append.parts:
        if part.rows.num_rows == 0 and (actions or len(append.parts) > 1):
            continue  # nothing new to write there
        created = _missing_directories(table_path, part.partition)
        add = write_data_file(table_path, part.rows, partition=part.partition, compression=append.compression,
                              fsync=False)
        actions.append({"add": add})
        data_path = table_path / add["path"]
        # A new partition directory's own entry must be durable too: sync the directories holding new entries.
        sync_first.extend([data_path, data_path.parent, *(d.parent for d in created)])
    if phases is not None:
        phases["write"] = time.perf_counter() - started
    commit_actions(table_path, append.version, actions, fsync=fsync, phases=phases,
                   sync_first=tuple(dict.fromkeys(sync_first)), info=info)


def write_data_file(table_path: Path, rows: pa.Table, *, partition: Mapping[str, str], compression: str = "zstd",
                    data_change: bool = True, fsync: bool = True) -> dict[str, Any]:
    """Write ``rows`` (without partition columns) as a new Parquet file of ``partition``; returns its add action.

    The file is not part of the table until a commit holds the action (:func:`commit_actions`).
    """
    relative = "/".join([*(f"{k}={v}" for k, v in partition.items()), f"part-{uuid.uuid4()}.{compression}.parquet"])
    data_path = table_path / relative
    created = _missing_directories(table_path, partition)
    data_path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(rows, data_path, compression=compression, **_encoding(rows.schema))
    if fsync:
        _fsync_all([data_path, data_path.parent, *(d.parent for d in created)])
    return {
        "path": relative,
        "partitionValues": dict(partition),
        "size": data_path.stat().st_size,
        "modificationTime": int(time.time() * 1000),
        "dataChange": data_change,
        "stats": json.dumps(file_stats(rows), separators=(",", ":")),
    }


def _encoding(schema: pa.Schema) -> dict[str, Any]:
    """Parquet options that skip work no reader uses: Parquet statistics only for the columns Delta keeps
    statistics for (string and binary min/max are the costliest and prune nothing here), and no dictionary
    encoding (keys and values are mostly unique within a file; constant columns compress as well without it)."""
    return {"write_statistics": [f.name for f in schema if any(test(f.type) for test in _STATS_TYPES)],
            "use_dictionary": False}


def remove_action(add: Mapping[str, Any], *, data_change: bool = False) -> dict[str, Any]:
    """The remove action retiring the file of ``add`` (an add action as :func:`write_data_file` or the log holds)."""
    return {"remove": {
        "path": add["path"],
        "deletionTimestamp": int(time.time() * 1000),
        "dataChange": data_change,
        "extendedFileMetadata": True,
        "partitionValues": dict(add.get("partitionValues") or {}),
        "size": add["size"],
    }}


def commit_actions(table_path: Path, version: int, actions: list[dict[str, Any]], *, info: Mapping[str, Any],
                   fsync: bool = True, sync_first: Sequence[Path] = (), phases: dict[str, float] | None = None
                   ) -> None:
    """Commit ``actions`` (``{"add": ...}`` / ``{"remove": ...}`` entries) as ``version``, or raise
    :class:`CommitConflictError` if that version exists. ``info`` goes into ``commitInfo`` (operation and extras);
    with ``fsync``, the files and directories in ``sync_first`` are made durable (concurrently with the commit
    file's own fsync) before the commit is linked; ``phases`` as for :func:`append_file`."""
    _check_log(table_path, version)
    commit_info = {"timestamp": int(time.time() * 1000), "readVersion": version - 1, "engineInfo": ENGINE_INFO,
                   **info}
    lines = [json.dumps({"commitInfo": commit_info}), *(json.dumps(action) for action in actions)]
    _put_if_absent(table_path / "_delta_log", commit_path(table_path, version), ("\n".join(lines) + "\n").encode(),
                   fsync=fsync, sync_first=sync_first, phases=phases)


def _missing_directories(table_path: Path, partition: Mapping[str, str]) -> list[Path]:
    """The partition directories (outermost first) that do not exist yet and a write into ``partition`` creates."""
    directory, missing = table_path, []
    for key, value in partition.items():
        directory = directory / f"{key}={value}"
        if not directory.exists():
            missing.append(directory)
    return missing


def _check_log(table_path: Path, version: int) -> None:
    log_dir = table_path / "_delta_log"
    if not log_dir.is_dir():
        raise NotADirectoryError(f"{log_dir} is not a readable Delta log directory")
    if version > 0 and not commit_path(table_path, version - 1).exists():
        raise CommitConflictError(f"{table_path} has no version {version - 1} to append after")


def file_stats(rows: pa.Table) -> dict[str, Any]:
    """Delta file statistics of ``rows``: the row count, and min/max/null counts of its integer, boolean and
    timestamp columns (string and binary columns get null counts only: no reader prunes on them here).

    Timestamps are written in milliseconds, the min rounded down and the max up, so pruning stays correct.
    """
    mins: dict[str, Any] = {}
    maxes: dict[str, Any] = {}
    nulls: dict[str, int] = {}
    for name, column in zip(rows.column_names, rows.columns, strict=True):
        nulls[name] = column.null_count
        if rows.num_rows == column.null_count or not any(test(column.type) for test in _STATS_TYPES):
            continue
        bounds = pc.min_max(column)
        low, high = bounds["min"].as_py(), bounds["max"].as_py()
        if pa.types.is_timestamp(column.type):
            low, high = _millis_iso(low, up=False), _millis_iso(high, up=True)
        mins[name], maxes[name] = low, high
    return {"numRecords": rows.num_rows, "minValues": mins, "maxValues": maxes, "nullCount": nulls}


def _millis_iso(when: dt.datetime, *, up: bool) -> str:
    whole = when.replace(microsecond=when.microsecond - when.microsecond % 1000)
    if up and whole != when:
        whole += dt.timedelta(milliseconds=1)
    return whole.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{whole.microsecond // 1000:03d}Z"


def _put_if_absent(directory: Path, target: Path, body: bytes, *, fsync: bool, sync_first: Sequence[Path] = (),
                   phases: dict[str, float] | None = None) -> None:
    started = time.perf_counter()
    temporary = directory / f"_commit_{uuid.uuid4()}.json.tmp"
    try:
        with open(temporary, "wb") as handle:
            handle.write(body)
        if fsync:
            _fsync_all([temporary, *sync_first])
        synced = time.perf_counter()
        if phases is not None:
            phases["sync"] = synced - started
        try:
            os.link(temporary, target)
        except FileExistsError:
            raise CommitConflictError(f"version {target.stem.lstrip('0') or '0'} of {directory.parent} already "
                                 "exists: another writer committed first") from None
    finally:
        temporary.unlink(missing_ok=True)
    if fsync:
        _fsync_dir(directory)
    if phases is not None:
        phases["link"] = time.perf_counter() - synced


def _fsync_all(paths: Sequence[Path]) -> None:
    """fsync every file or directory of ``paths`` concurrently; raises the first failure."""
    futures = [_SYNC_POOL.submit(_fsync_path, path) for path in paths[1:]]
    try:
        _fsync_path(paths[0])
    finally:
        for future in futures:
            future.result()


def _fsync_path(path: Path) -> None:
    if path.is_dir():
        _fsync_dir(path)
    else:
        _fsync_file(path)


def _fsync_file(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _fsync_dir(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
