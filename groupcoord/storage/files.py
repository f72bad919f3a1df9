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

On object storage (an ``s3://`` :class:`~groupcoord.storage.location.TableLocation`) the same functions hand the
commit to their twin, :mod:`groupcoord.storage.object_files`: the same Parquet files and commit JSON, the commit
created with a put-if-absent instead of the link.

No in-memory table state is read or updated, so a commit costs the same whatever the table's size. With ``fsync``,
the data files, their directory entries and the commit file are fsynced before the commit is linked (concurrently:
they have no order among them, and concurrent fsyncs share journal commits), and the log directory after, so a
commit that returns is durable. Without it, a commit that returns is visible to every process and survives the
writing process, and the page cache holds it until the OS writes it. Table creation, metadata changes and
checkpoints stay with delta-rs.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from groupcoord.storage import object_files
from groupcoord.storage.commits import (
    ENGINE_INFO,
    CommitConflictError,
    FileAppend,
    Part,
    add_action,
    append_info,
    commit_body,
    commit_name,
    data_file_name,
    file_stats,
    parquet_options,
    remove_action,
)
from groupcoord.storage.location import TableLocation, as_location

__all__ = [
    "ENGINE_INFO", "CommitConflictError", "FileAppend", "Part", "append_file", "commit_actions", "commit_path",
    "file_stats", "remove_action", "split_by_counts", "split_by_partition", "write_data_file",
]

_SYNC_POOL = ThreadPoolExecutor(2, thread_name_prefix="groupcoord-fsync")
"""Runs the fsyncs a commit can wait for concurrently (see the module docs)."""


def commit_path(table_path: Path, version: int) -> Path:
    """Where the commit of ``version`` lives (in a local table)."""
    return table_path / commit_name(version)


def split_by_partition(rows: pa.Table, column: str) -> tuple[Part, ...]:
    """``rows``, sorted by the partition column ``column``, as one :class:`Part` per partition value."""
    return split_by_counts(rows, column, {entry["values"]: int(entry["counts"])
                                          for entry in pc.value_counts(rows.column(column)).to_pylist()})


def split_by_counts(rows: pa.Table, column: str, counts: Mapping[Any, int]) -> tuple[Part, ...]:
    """``rows``, grouped by the partition column ``column``, as one :class:`Part` per partition value: the first
    ``counts[first value]`` rows, then the next value's, in the order of ``counts`` (no sort, no counting)."""
    data = rows.drop_columns([column])
    parts, start = [], 0
    for value, count in counts.items():
        parts.append(Part(data.slice(start, count), {column: str(value)}))
        start += count
    return tuple(parts)


def append_file(table: str | Path | TableLocation, append: FileAppend, *, fsync: bool = True,
                phases: dict[str, float] | None = None) -> None:
    """Write each part of ``append`` as one data file and commit them as version ``append.version`` of the table.

    Raises :class:`CommitConflictError` if that version already exists, or if the previous version does not (the
    caller's idea of the table is wrong); any :class:`OSError` or Arrow error means storage trouble, and then
    nothing was committed (orphaned data files may be left for garbage collection). ``phases``, when given,
    receives the seconds spent in ``write`` (the Parquet files), ``sync`` (the concurrent fsyncs before the link)
    and ``link`` (link and log-directory fsync).
    """
    location = as_location(table)
    if not location.is_local:
        object_files.append_objects(location, append, phases=phases)
        return
    table_path = location.local_path
    started = time.perf_counter()
    _check_log(table_path, append.version)
    info = append_info(append)
    actions = [{"add": dict(add)} for add in append.written]
    sync_first: list[Path] = []
    for part in append.parts:
        if part.rows.num_rows == 0 and (actions or len(append.parts) > 1):
            continue  # nothing new to write there
        add, new_entries = _write_local(table_path, part.rows, partition=part.partition,
                                        compression=append.compression, data_change=True)
        actions.append({"add": add})
        sync_first.extend(new_entries)
    if phases is not None:
        phases["write"] = time.perf_counter() - started
    _put_if_absent(table_path / "_delta_log", commit_path(table_path, append.version),
                   commit_body(append.version, actions, info), fsync=fsync,
                   sync_first=tuple(dict.fromkeys(sync_first)), phases=phases)


def write_data_file(table: str | Path | TableLocation, rows: pa.Table, *, partition: Mapping[str, str],
                    compression: str = "zstd", data_change: bool = True, fsync: bool = True) -> dict[str, Any]:
    """Write ``rows`` (without partition columns) as a new Parquet file of ``partition``; returns its add action.

    The file is not part of the table until a commit holds the action (:func:`commit_actions`).
    """
    location = as_location(table)
    if not location.is_local:
        return object_files.write_data_object(location, rows, partition=partition, compression=compression,
                                                 data_change=data_change)
    add, new_entries = _write_local(location.local_path, rows, partition=partition, compression=compression,
                                    data_change=data_change)
    if fsync:
        _fsync_all(new_entries)
    return add


def _write_local(table_path: Path, rows: pa.Table, *, partition: Mapping[str, str], compression: str,
                 data_change: bool) -> tuple[dict[str, Any], list[Path]]:
    """Write ``rows`` as a new data file of ``partition`` in a local table: its add action, and what to fsync to
    make it durable (the file, and each directory that got a new entry: a new partition directory's parent too)."""
    relative = data_file_name(partition, compression)
    data_path = table_path / relative
    created = _missing_directories(table_path, partition)
    if created:
        data_path.parent.mkdir(parents=True, exist_ok=True)
    with pa.OSFile(str(data_path), "wb") as sink:  # a native file: no filesystem resolution, and its size from tell
        pq.write_table(rows, sink, compression=compression, **parquet_options(rows.schema))
        size = sink.tell()
    add = add_action(relative, rows, partition=partition, size=size, data_change=data_change)
    return add, [data_path, data_path.parent, *(d.parent for d in created)]


def commit_actions(table: str | Path | TableLocation, version: int, actions: list[dict[str, Any]], *,
                   info: Mapping[str, Any], fsync: bool = True, sync_first: Sequence[Path] = (),
                   phases: dict[str, float] | None = None) -> None:
    """Commit ``actions`` (``{"add": ...}`` / ``{"remove": ...}`` entries) as ``version``, or raise
    :class:`CommitConflictError` if that version exists. ``info`` goes into ``commitInfo`` (operation and extras);
    with ``fsync``, the files and directories in ``sync_first`` are made durable (concurrently with the commit
    file's own fsync) before the commit is linked; ``phases`` as for :func:`append_file`."""
    location = as_location(table)
    if not location.is_local:
        object_files.commit_objects(location, version, actions, info=info, phases=phases)
        return
    table_path = location.local_path
    _check_log(table_path, version)
    _put_if_absent(table_path / "_delta_log", commit_path(table_path, version), commit_body(version, actions, info),
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
