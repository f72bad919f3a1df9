"""The Delta file writer on object storage: the twin of :mod:`groupcoord.storage.files` for ``s3://`` tables.

The same two pieces as on a local disk, in the same constant time whatever the table's size:

1. data files: each Parquet file is written to memory and put as one object (the parts of an append concurrently);
2. the commit ``_delta_log/<version>.json``, created with a put-if-absent (``If-None-Match: *``): the server lets
   exactly one writer create each version, and a loser gets :class:`~groupcoord.storage.files.CommitConflictError`
   with nothing of its commit in the table.

**A lost response.** A put can succeed on the server while its response is lost (a connection reset, a timeout);
the client's retry then finds the object it created itself and gets 412. Every commit written here carries a
random ``groupcoord.commitId`` in its ``commitInfo``: on 412 the writer reads the version back, and if it holds its
own id the commit stands (it neither fails nor writes twice); any other id means another writer won.

Object stores make a finished put durable, so there is no fsync step: ``phases`` gets ``write`` (the Parquet files
and their puts) and ``link`` (the previous version's check and the commit's put).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from groupcoord.storage import objects
from groupcoord.storage.commits import (
    COMMIT_ID_KEY,
    CommitConflictError,
    FileAppend,
    add_action,
    append_info,
    commit_body,
    commit_id_of,
    commit_name,
    data_file_name,
    parquet_options,
)
from groupcoord.storage.location import TableLocation

__all__ = ["COMMIT_ID_KEY", "append_objects", "commit_objects", "write_data_object"]

log = logging.getLogger("groupcoord.storage.object_files")

_PUT_POOL = ThreadPoolExecutor(4, thread_name_prefix="groupcoord-object-put")
"""Puts the data files of one append concurrently (obstore releases the GIL while a request is in flight)."""


def append_objects(location: TableLocation, append: FileAppend, *, phases: dict[str, float] | None = None) -> None:
    """Write each part of ``append`` as one data object and commit them as version ``append.version``.

    Raises :class:`CommitConflictError` if another writer created that version, or if the previous version does
    not exist; any other error means storage trouble, and then nothing was committed (orphaned data objects may be
    left for garbage collection).
    """
    started = time.perf_counter()
    parts = [part for part in append.parts
             if part.rows.num_rows or not (append.written or len(append.parts) > 1)]
    written = list(_PUT_POOL.map(
        lambda part: write_data_object(location, part.rows, partition=part.partition,
                                       compression=append.compression), parts))
    actions = [{"add": dict(add)} for add in (*append.written, *written)]
    if phases is not None:
        phases["write"] = time.perf_counter() - started
    commit_objects(location, append.version, actions, info=append_info(append), phases=phases,
                   previous_known=append.previous_known)


def write_data_object(location: TableLocation, rows: pa.Table, *, partition: Mapping[str, str],
                      compression: str = "zstd", data_change: bool = True) -> dict[str, Any]:
    """Put ``rows`` (without partition columns) as a new Parquet object of ``partition``; returns its add action."""
    relative = data_file_name(partition, compression)
    sink = pa.BufferOutputStream()
    pq.write_table(rows, sink, compression=compression, **parquet_options(rows.schema))
    data = sink.getvalue().to_pybytes()
    objects.put(location, relative, data)
    return add_action(relative, rows, partition=partition, size=len(data), data_change=data_change)


def commit_objects(location: TableLocation, version: int, actions: Sequence[Mapping[str, Any]], *,
                   info: Mapping[str, Any], phases: dict[str, float] | None = None,
                   previous_known: bool = False) -> None:
    """Create commit ``version`` holding ``actions`` with a put-if-absent, or raise :class:`CommitConflictError`
    if another writer's commit is there (a commit of this very call, whose response was lost, counts as done).
    Unless ``previous_known``, a missing ``version - 1`` is a conflict too (checked with one request)."""
    started = time.perf_counter()
    if version > 0 and not previous_known and not objects.exists(location, commit_name(version - 1)):
        raise CommitConflictError(f"{location} has no version {version - 1} to append after")
    commit_id = uuid.uuid4().hex
    body = commit_body(version, actions, {**info, COMMIT_ID_KEY: commit_id})
    if not objects.put_if_absent(location, commit_name(version), body):
        found = commit_id_of(objects.read(location, commit_name(version)))
        if found != commit_id:
            raise CommitConflictError(f"version {version} of {location} already exists: another writer committed "
                                      "first")
        log.info("version %d of %s: the put's response was lost, and the version holds this writer's commit",
                 version, location)
    if phases is not None:
        phases["link"] = time.perf_counter() - started
