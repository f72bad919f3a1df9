"""One ``groupcoord-delta`` commit of rows and offsets, through delta-rs: the one exactly-once writer of both engines.

:func:`commit_batch` reads each partition's app transaction version from the snapshot it commits on, plans the
commit (:mod:`groupcoord.sink.plan`), rewrites the files that straddle a version, and commits the
kept files with one app transaction per partition. When another commit wrote the same app ids since that snapshot
(two queries, two member tasks, or a replay racing the new owner), delta-rs refuses it: the commit then reloads the
table and plans again from the new versions (never a blind retry of the old plan), up to ``attempts`` times.

Its two callers: the ``groupcoord-delta`` sink's driver (:mod:`groupcoord.sink.data_sink`), committing the files its
executors wrote, and :func:`append_batch`, for a writer that reads its records itself and writes and commits them in
one process (the executors-as-members engine, :mod:`groupcoord.ingest.worker`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import unquote

import pyarrow as pa
from deltalake import DeltaTable
from deltalake.exceptions import CommitFailedError

from groupcoord.sink.files import PartitionFile, remove_files, trim_file, write_partition_files
from groupcoord.sink.plan import (
    BatchRange,
    CommitPlan,
    SinkGapError,
    TopicPartitionKey,
    plan_commit,
)
from groupcoord.storage.location import as_location
from groupcoord.storage.tables import Where, open_or_create, open_table
from groupcoord.topics.app_transactions import MEMBER_METADATA_KEY, offsets_commit, transaction_versions

log = logging.getLogger("groupcoord.sink.data_sink")

ResetMarkers = Callable[[], Mapping[TopicPartitionKey, int]]
"""The group's offsets that ``reset-offsets`` committed (read only when a batch would leave a gap)."""


class SinkConflictError(RuntimeError):
    """Concurrent commits of the same partitions kept winning over this one, attempt after attempt."""


@dataclass(frozen=True)
class BatchCommit:
    """What a batch's commit did: the table version it made (``None``: nothing new to write), the rows it added,
    and each partition's version afterwards (what the group commit then records)."""

    table_version: int | None
    rows: int
    versions: Mapping[TopicPartitionKey, int]
    attempts: int


def commit_batch(table_dir: Where, schema: pa.Schema, group_id: str, ranges: Mapping[TopicPartitionKey, BatchRange],
                 files: Sequence[PartitionFile], *, resets: ResetMarkers, attempts: int = 5,
                 reader: str | None = None, table: DeltaTable | None = None) -> BatchCommit:
    """Commit one batch's files (see the module docstring); raises :class:`SinkGapError` on a refused gap.
    ``reader``, the member that read the batch, is recorded in the commit info; ``table``, an open handle of the
    table a caller keeps between batches, is brought up to date and used (else the table is opened)."""
    if table is None:
        table = open_table(table_dir)
    else:
        table.update_incremental()
    info = {MEMBER_METADATA_KEY: reader} if reader else None
    for attempt in range(1, attempts + 1):
        if attempt > 1:
            table.update_incremental()
        held = transaction_versions(table, group_id, ranges)
        try:
            plan = plan_commit(group_id, ranges, files, held)
        except SinkGapError:
            plan = plan_commit(group_id, ranges, files, held, resets())
        if not plan.writes:
            log.info("batch of group %s: every row already in %s (a replay); nothing to commit", group_id, table_dir)
            remove_files(plan.drop, table_dir)
            return BatchCommit(None, 0, plan.versions, attempt)
        rewritten = [(old, trim_file(old, table_dir, keep_from)) for old, keep_from in plan.trim]
        kept = [*plan.keep, *(new for _, new in rewritten if new is not None)]
        try:
            table.create_write_transaction([f.add_action() for f in kept], "append", schema,
                                           commit_properties=offsets_commit(group_id, plan.ends, metadata=info))
        except CommitFailedError as exc:
            remove_files([new for old, new in rewritten if new is not None and new is not old], table_dir)
            log.info("batch of group %s: a concurrent commit wrote the same partitions (%s); planning again "
                     "(attempt %d of %d)", group_id, exc, attempt, attempts)
            continue
        _discard(plan, rewritten, table_dir)
        table.update_incremental()
        return BatchCommit(table.version(), sum(f.rows for f in kept), plan.versions, attempt)
    raise SinkConflictError(f"groupcoord-delta: {attempts} commits of group '{group_id}' to {table_dir} in a row lost "
                            f"to concurrent commits of the same partitions")


def _discard(plan: CommitPlan, rewritten: list[tuple[PartitionFile, PartitionFile | None]],
             table_dir: Where) -> None:
    """Delete the written files the commit left out (rows the table held already)."""
    remove_files([*plan.drop, *(old for old, new in rewritten if new is not old)], table_dir)


def append_batch(table_dir: Where, group_id: str, ranges: Mapping[TopicPartitionKey, BatchRange],
                 batches: Iterable[pa.RecordBatch], *, resets: ResetMarkers, attempts: int = 5,
                 reader: str | None = None, table: DeltaTable | None = None) -> BatchCommit:
    """Write and commit one batch in this process, as the ``groupcoord-delta`` sink's executors (the files) and
    driver (:func:`commit_batch`) do between them. ``batches`` hold the rows read of ``ranges`` (the table's columns,
    and any others, which are left out); ``table`` is as for :func:`commit_batch`. The files no commit took are
    removed when the commit fails."""
    table_dir = as_location(table_dir)
    if table is None:
        table = open_table(table_dir)
    schema = pa.schema(table.schema().to_arrow())
    files = write_partition_files(batches, table_dir, schema)
    try:
        return commit_batch(table_dir, schema, group_id, ranges, files, resets=resets, attempts=attempts,
                            reader=reader, table=table)
    except BaseException:
        held = table_files(table_dir)
        remove_files([f for f in files if f.path not in held], table_dir)
        raise


def table_files(table_dir: Where) -> frozenset[str]:
    """The data files (paths relative to the table's directory) of the table's latest version."""
    paths = [str(path) for path in open_table(table_dir).get_add_actions(flatten=True).column("path").to_pylist()]
    return frozenset(paths) | {unquote(path) for path in paths}  # as written, and percent-decoded


def ensure_table(table_dir: Where, schema: pa.Schema) -> DeltaTable:
    """The sink's table, created empty with ``schema`` when missing (protocol (1,2))."""
    return open_or_create(table_dir, schema, name="groupcoord-delta sink")
