"""The Delta protocol's pieces that groupcoord's own commits are made of, on a local disk and on object storage
alike: the appended parts, add and remove actions with their file statistics, data file names and Parquet options,
and the bytes of a commit file.

:mod:`groupcoord.storage.files` (local) and :mod:`groupcoord.storage.object_files` (object storage) write them.
"""

from __future__ import annotations

import datetime as dt
import json
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

ENGINE_INFO = "groupcoord-delta-append"
"""``engineInfo`` of the commits written here (delta-rs writes its own name there)."""

COMMIT_ID_KEY = "groupcoord.commitId"
"""``commitInfo`` key of the id by which a writer recognises its own commit after a lost response (a put that
succeeded on the server, whose client retried and got 412)."""

_STATS_TYPES = (pa.types.is_integer, pa.types.is_boolean, pa.types.is_timestamp)
_SMALL_COLUMN = 4096
"""Columns up to this many values get their bounds in Python: a compute call costs tens of microseconds whatever
the size, and a produce or offset commit writes files of a few rows, several per commit."""
_PER_MILLI = {"ms": 1, "us": 1000, "ns": 1_000_000}
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


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
    compression: str = "snappy"
    """The Parquet codec of the append's files: snappy by default, Spark's own default, where zstd cost a quarter of
    a millisecond more per file for an offset commit's few rows (a context per column chunk); compaction rewrites
    the files with its own codec."""
    written: tuple[Mapping[str, Any], ...] = ()
    """Add actions of data files written (and fsynced with their directories) before, committed ahead of this
    append's own files in the same commit (a snapshot's file written ahead of its commit slot)."""
    previous_known: bool = False
    """The writer knows that ``version - 1`` exists (it committed or read that version itself): on object storage
    the commit then skips the request that checks it."""


def append_info(append: FileAppend) -> dict[str, Any]:
    """The ``commitInfo`` entries of ``append`` (without the timestamp and read version)."""
    return {
        "operation": "WRITE",
        "operationParameters": {"mode": "Append", "partitionBy": json.dumps(list(append.partition_by))},
        "isBlindAppend": True,
        **append.commit_info,
    }


def data_file_name(partition: Mapping[str, str], compression: str) -> str:
    """A new data file's path relative to the table: its partition's Hive-style directories and a unique name."""
    return "/".join([*(f"{k}={v}" for k, v in partition.items()), f"part-{uuid.uuid4()}.{compression}.parquet"])


def add_action(relative: str, rows: pa.Table, *, partition: Mapping[str, str], size: int, data_change: bool
               ) -> dict[str, Any]:
    """The add action of the data file ``relative`` (``size`` bytes) holding ``rows``, with their statistics."""
    return {
        "path": relative,
        "partitionValues": dict(partition),
        "size": size,
        "modificationTime": int(time.time() * 1000),
        "dataChange": data_change,
        "stats": json.dumps(file_stats(rows), separators=(",", ":")),
    }


def parquet_options(schema: pa.Schema) -> dict[str, Any]:
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


def commit_body(version: int, actions: Sequence[Mapping[str, Any]], info: Mapping[str, Any]) -> bytes:
    """The bytes of commit ``version``: its ``commitInfo`` line (``info`` after the timestamp, the read version
    and the engine), then one line per action."""
    commit_info = {"timestamp": int(time.time() * 1000), "readVersion": version - 1, "engineInfo": ENGINE_INFO,
                   **info}
    lines = [json.dumps({"commitInfo": commit_info}), *(json.dumps(action) for action in actions)]
    return ("\n".join(lines) + "\n").encode()


def commit_name(version: int) -> str:
    """The commit file of ``version``, relative to the table."""
    return f"_delta_log/{version:020d}.json"


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
        low, high = _bounds(column)
        if pa.types.is_timestamp(column.type):
            low, high = _millis_iso(low, column.type.unit, up=False), _millis_iso(high, column.type.unit, up=True)
        mins[name], maxes[name] = low, high
    return {"numRecords": rows.num_rows, "minValues": mins, "maxValues": maxes, "nullCount": nulls}


def _bounds(column: pa.ChunkedArray) -> tuple[Any, Any]:
    """The least and greatest non-null value of an integer, boolean or timestamp ``column`` (a timestamp's as its
    integer count of the column's unit)."""
    if pa.types.is_timestamp(column.type):
        column = pa.chunked_array([chunk.view(pa.int64()) for chunk in column.chunks], pa.int64())
    if column.null_count or len(column) > _SMALL_COLUMN:
        bounds = pc.min_max(column)
        return bounds["min"].as_py(), bounds["max"].as_py()
    values = column.to_pylist()
    return min(values), max(values)


def _millis_iso(value: int, unit: str, *, up: bool) -> str:
    """The instant ``value`` (in ``unit`` since the epoch, UTC) as an ISO string in whole milliseconds, rounded
    down, or up with ``up``."""
    if unit == "s":
        millis = value * 1000
    else:
        per_milli = _PER_MILLI[unit]
        millis = -(-value // per_milli) if up else value // per_milli
    whole = _EPOCH + dt.timedelta(milliseconds=millis)
    return whole.strftime("%Y-%m-%dT%H:%M:%S.") + f"{whole.microsecond // 1000:03d}Z"


def commit_id_of(body: bytes | None) -> str | None:
    """The ``groupcoord.commitId`` in the commitInfo line of a commit's ``body`` (``None``: none, or no body)."""
    if not body:
        return None
    try:
        first = json.loads(body.split(b"\n", 1)[0])
    except ValueError:
        return None
    found = first.get("commitInfo", {}).get(COMMIT_ID_KEY) if isinstance(first, dict) else None
    return None if found is None else str(found)
