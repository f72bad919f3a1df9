"""The embedded topic log: one Delta table per topic, with dense per-partition offsets, and many writers.

Writers. Every process may produce to a topic log at once: ``groupcoord topics produce`` (the CLI), this class in
any Python process, and the serving process's Produce group commit (:mod:`groupcoord.topics.appender`). No lease
fences them; instead every produce is a conditional commit: read the end offset of every partition at table version
V, number the new records from there, and commit at V+1 through :mod:`groupcoord.storage.files` (one sorted data
file per touched partition, and the commit file created only if V+1 does not exist yet). If another writer got V+1
first, re-read and renumber (:mod:`groupcoord.topics.delta_cas`). Offsets are therefore dense from 0 with no
duplicates, and no writer loses or reorders another's records, whatever the number of writers.

fsync. A topic log does not fsync: a produce returns (and Produce acknowledges) once its commit is written, when
every process reads it and it survives the writing process, and the page cache holds it until the OS writes it, as a
Kafka broker with its default ``flush.messages`` does. A machine crash can lose the latest commits. (The record
log, the coordinator's own log, fsyncs every commit before it acknowledges.)

Reads never scan the whole table. The table is partitioned by ``partition``, and each data file carries min/max
``offset`` statistics in its Delta add action: the start and end offsets of every partition come from those
statistics alone (:mod:`groupcoord.topics.offset_index`, brought forward commit by commit once known), and a read
opens only the files of its partition whose offset range overlaps the requested one.

A produce call writes one file per touched partition in one commit, so large producers should pass large batches.
Files of lost commits are left unreferenced, for maintenance to collect (:mod:`groupcoord.topics.maintenance`).
Checkpoints are written off the produce path (:class:`~groupcoord.storage.background.BackgroundCheckpointer`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pa_fs
from deltalake import DeltaTable

from groupcoord.state_root import StateRoot
from groupcoord.storage.background import BackgroundCheckpointer
from groupcoord.storage.files import FileAppend, append_file, split_by_counts
from groupcoord.storage.freshness import TableFreshness
from groupcoord.storage.tables import filesystem_of, table_dataset
from groupcoord.topics.catalog import TopicCatalog
from groupcoord.topics.config import TopicsConfig
from groupcoord.topics.delta_cas import RetryPolicy, commit_with_retry
from groupcoord.topics.errors import OffsetOutOfRangeError, UnknownTopicOrPartitionError
from groupcoord.topics.file_reads import DECODED, PartitionFiles, read_range
from groupcoord.topics.log_table import (
    CREATE_TIME,
    LOG_APPEND_TIME,
    NO_COMPRESSION,
    PARTITION_COLUMNS,
    TOPIC_LOG_SCHEMA,
    Headers,
    create_topic_log,
)
from groupcoord.topics.offset_index import EMPTY, PartitionOffsets, offsets_at_version, widened
from groupcoord.topics.partitioner import KeyPartitioner
from groupcoord.topics.record_columns import RecordColumns, datetime_to_millis, log_rows

__all__ = ["DEFAULT_MAX_RECORDS", "PartitionOffsets", "ProduceResult", "ProducerRecord", "TopicLog", "TopicRecord"]

DEFAULT_MAX_RECORDS = 500
CHECKPOINT_INTERVAL = 100
"""A writer checkpoints the topic log every this many of its own commits (delta-rs's default interval)."""
COMPRESSION = "snappy"
"""The Parquet codec of a topic log's data files."""


@dataclass(frozen=True)
class ProducerRecord:
    """A record to produce. ``partition`` forces a partition; else the key (murmur2) or round-robin decides.

    Without a ``timestamp`` the log stamps the record with its commit attempt's time, as LogAppendTime; with one,
    the record keeps it, as CreateTime (``timestamp_type`` overrides either). ``compression`` names the codec the
    record arrived in (Produce keeps it, so Fetch answers in it; ``"none"`` otherwise).
    """

    value: bytes | None
    key: bytes | None = None
    partition: int | None = None
    timestamp: datetime | None = None
    headers: Headers = ()
    timestamp_type: int | None = None
    compression: str = NO_COMPRESSION

    def kept_timestamp_type(self) -> int:
        """The timestamp type the log stores for this record."""
        if self.timestamp_type is not None:
            return self.timestamp_type
        return CREATE_TIME if self.timestamp is not None else LOG_APPEND_TIME


@dataclass(frozen=True)
class TopicRecord:
    """A record read back from the log (rows of state format 1 read as no headers, CreateTime, no compression)."""

    partition: int
    offset: int
    timestamp: datetime
    key: bytes | None
    value: bytes | None
    headers: Headers = ()
    timestamp_type: int = CREATE_TIME
    compression: str = NO_COMPRESSION

    @classmethod
    def from_table(cls, table: pa.Table) -> list[TopicRecord]:
        """The records of rows of the log table (rows of state format 1 lack ``headers``, ``timestamp_type`` and
        ``compression``), converted a column at a time: several times faster than a dict per row, which Fetch paid
        for every record it served."""
        rows = table.num_rows
        absent: list[Any] = [None] * rows
        column = {name: table.column(name).to_pylist() if name in table.column_names else absent
                  for name in ("partition", "offset", "timestamp", "key", "value", "headers", "timestamp_type",
                               "compression")}
        return [
            cls(partition, offset, timestamp, key, value,
                tuple((h["key"], h["value"]) for h in headers) if headers else (),
                CREATE_TIME if timestamp_type is None else timestamp_type, compression or NO_COMPRESSION)
            for partition, offset, timestamp, key, value, headers, timestamp_type, compression in zip(
                column["partition"], column["offset"], column["timestamp"], column["key"], column["value"],
                column["headers"], column["timestamp_type"], column["compression"], strict=True)
        ]


def columns_of(records: Sequence[ProducerRecord]) -> RecordColumns:
    """``records`` as the columns :meth:`TopicLog.append_columns` takes."""
    return RecordColumns(
        keys=[r.key for r in records],
        values=[r.value for r in records],
        timestamps_ms=[None if r.timestamp is None else datetime_to_millis(r.timestamp) for r in records],
        headers=[r.headers for r in records],
        timestamp_types=[r.kept_timestamp_type() for r in records],
        compressions=[r.compression for r in records],
    )


@dataclass(frozen=True)
class ColumnsAppended:
    """Where :meth:`TopicLog.append_columns` put its batches: each one's base offset, in the order given."""

    base_offsets: tuple[int, ...]
    version: int
    attempts: int


@dataclass(frozen=True)
class ProduceResult:
    """Where a produce call put its records: ``(partition, offset)`` per record in input order."""

    assigned: tuple[tuple[int, int], ...]
    version: int
    attempts: int



class TopicLog:
    """Produce to and read from the log of one topic in a state root. Safe to share between threads."""

    def __init__(self, root: StateRoot, topic: str, *, catalog: TopicCatalog | None = None,
                 config: TopicsConfig | None = None, partitioner: KeyPartitioner | None = None) -> None:
        self._root = root
        self._topic = topic
        self._config = config or (catalog.config if catalog is not None else TopicsConfig())
        self._catalog = catalog or TopicCatalog(root, config=self._config)
        self._partitioner = partitioner or KeyPartitioner()
        self._policy = RetryPolicy(backoff_ms=self._config.commit_backoff_ms,
                                   timeout_ms=self._config.commit_timeout_ms)
        self._lock = threading.Lock()
        self._path = root.topic_path(topic)
        self._checkpointer = BackgroundCheckpointer(self._path, interval=CHECKPOINT_INTERVAL)
        self._table: DeltaTable | None = None
        self._freshness = TableFreshness(self._path)
        self._cached: tuple[int, dict[int, PartitionOffsets]] = (-1, {})
        """The bounds at a version: the newest this writer knows (its own last commit, or the table's as read)."""
        self._table_filesystem: pa_fs.FileSystem | None = None
        self._files: PartitionFiles | None = None
        """Where each partition's offsets are at the version last read (see :mod:`groupcoord.topics.file_reads`)."""

    @property
    def topic(self) -> str:
        """The topic name."""
        return self._topic

    def partitions(self) -> int:
        """The topic's current partition count, from the catalog (raises if the topic does not exist)."""
        return self._catalog.describe(self._topic).partitions

    # --- producing ----------------------------------------------------------------------------------------------------

    def produce(self, records: Iterable[ProducerRecord]) -> ProduceResult:
        """Append ``records`` in one conditional commit and return the offsets they got.

        Records of one partition keep their input order. On a lost commit the offsets are recomputed from the
        re-read table and the commit is retried, until ``topics.commit.timeout.ms``.
        """
        batch = list(records)
        count = self.partitions()
        by_partition: dict[int, list[int]] = {}
        for index, record in enumerate(batch):
            target = self._partitioner.partition(self._topic, record.key, count, record.partition)
            by_partition.setdefault(target, []).append(index)
        if not batch:
            with self._lock:
                return ProduceResult((), self._latest(self._open())[0], 0)
        appended = self.append_columns([(partition, columns_of([batch[i] for i in indexes]))
                                        for partition, indexes in by_partition.items()])
        assigned: list[tuple[int, int]] = [(0, 0)] * len(batch)
        for (partition, indexes), base in zip(by_partition.items(), appended.base_offsets, strict=True):
            for step, index in enumerate(indexes):
                assigned[index] = (partition, base + step)
        return ProduceResult(tuple(assigned), appended.version, appended.attempts)

    def append_columns(self, batches: Sequence[tuple[int, RecordColumns]]) -> ColumnsAppended:
        """Append ``batches`` (each a partition and its records, kept contiguous and in order) in one conditional
        commit; returns each batch's base offset. Retried as :meth:`produce` is."""
        if not batches:
            raise ValueError("nothing to append")
        self._check_partitions(partition for partition, _ in batches)
        # The rows go in partition order, each partition's batches in the order given: sorted by partition and then
        # offset (tight min/max offset statistics per file, which reads prune on) without sorting them.
        order = sorted(range(len(batches)), key=lambda index: batches[index][0])
        columns = RecordColumns.concatenated([batches[index][1] for index in order])
        with self._lock:
            table = self._open()

            def attempt(current: DeltaTable) -> tuple[int, ...]:
                version, before = self._latest(current)
                next_offset = {partition: bounds.end for partition, bounds in before.items()}
                bases = [0] * len(batches)
                for index, (partition, records) in enumerate(batches):
                    bases[index] = next_offset.get(partition, 0)
                    next_offset[partition] = bases[index] + len(records)
                partitions: list[int] = []
                offsets: list[int] = []
                counts: dict[int, int] = {}
                for index in order:
                    partition, records = batches[index]
                    partitions += [partition] * len(records)
                    offsets += range(bases[index], bases[index] + len(records))
                    counts[partition] = counts.get(partition, 0) + len(records)
                rows = log_rows(columns, partitions, offsets, datetime_to_millis(datetime.now(UTC)))
                append_file(self._path, FileAppend(
                    version=version + 1,
                    parts=split_by_counts(rows, PARTITION_COLUMNS[0], counts),
                    partition_by=tuple(PARTITION_COLUMNS),
                    commit_info={"isBlindAppend": False, "groupcoord_operation": "produce"},
                    compression=COMPRESSION,
                    previous_known=True,  # the version this writer read or committed itself
                ), fsync=False)
                # The commit was conditional on the version read: the new bounds are known without a re-read.
                ranges = {partition: (next_offset[partition] - count, next_offset[partition])
                          for partition, count in counts.items()}
                self._cached = (version + 1, widened(before, ranges))
                self._checkpointer.committed(version + 1)
                return tuple(bases)

            outcome = commit_with_retry(table, attempt, policy=self._policy,
                                        what=f"producing {len(columns)} records to '{self._topic}'")
            return ColumnsAppended(outcome.value, self._cached[0], outcome.attempts)

    # --- reading ------------------------------------------------------------------------------------------------------

    def read(self, partition: int, from_offset: int, max_records: int = DEFAULT_MAX_RECORDS) -> pa.Table:
        """Up to ``max_records`` records of ``partition`` from ``from_offset`` on, in offset order (Arrow table).

        ``from_offset`` equal to the log-end offset gives an empty table; outside ``[start, end]`` raises
        :class:`OffsetOutOfRangeError`.
        """
        self._check_partition(partition)
        with self._lock:
            table = self._refreshed()
            bounds = self._offsets_at(table).get(partition, EMPTY)
            if not bounds.start <= from_offset <= bounds.end:
                raise OffsetOutOfRangeError(
                    f"Offset {from_offset} is out of range for partition {self._topic}-{partition} "
                    f"(log start {bounds.start}, log end {bounds.end})."
                )
            upper = min(bounds.end, from_offset + max(max_records, 0))
            if upper <= from_offset:
                return TOPIC_LOG_SCHEMA.empty_table()
            files = self._files_at(table)
            if files is None:
                dataset = table_dataset(table, where=[
                    ("partition", "=", partition), ("offset", ">=", from_offset), ("offset", "<", upper),
                ])
            else:
                overlapping = files.overlapping(partition, from_offset, upper)
                filesystem = self._filesystem(table)
        if files is not None:
            return read_range(overlapping, DECODED, table.table_uri, filesystem, partition, from_offset, upper)
        rows = dataset.to_table(filter=(pc.field("offset") >= from_offset) & (pc.field("offset") < upper))
        return rows.select(TOPIC_LOG_SCHEMA.names).cast(TOPIC_LOG_SCHEMA).sort_by("offset")

    def read_records(self, partition: int, from_offset: int,
                     max_records: int = DEFAULT_MAX_RECORDS) -> list[TopicRecord]:
        """:meth:`read` as a list of :class:`TopicRecord`."""
        return TopicRecord.from_table(self.read(partition, from_offset, max_records))

    def offsets(self) -> dict[int, PartitionOffsets]:
        """Start and end offsets of every partition of the topic, from Delta file statistics only."""
        count = self.partitions()
        with self._lock:
            known = self._offsets_at(self._refreshed())
        return {partition: known.get(partition, EMPTY) for partition in range(count)}

    def log_start_offset(self, partition: int) -> int:
        """The first offset still readable in ``partition``."""
        return self._bounds(partition).start

    def log_end_offset(self, partition: int) -> int:
        """The offset the next record of ``partition`` will get."""
        return self._bounds(partition).end

    def end_offsets(self) -> dict[int, int]:
        """Log-end offset of every partition."""
        return {partition: bounds.end for partition, bounds in self.offsets().items()}

    def _bounds(self, partition: int) -> PartitionOffsets:
        self._check_partition(partition)
        with self._lock:
            return self._offsets_at(self._refreshed()).get(partition, EMPTY)

    def _check_partition(self, partition: int) -> None:
        self._check_partitions((partition,))

    def _check_partitions(self, partitions: Iterable[int]) -> None:
        count = self.partitions()
        for partition in partitions:
            if not 0 <= partition < count:
                raise UnknownTopicOrPartitionError(
                    f"Partition {partition} of topic '{self._topic}' does not exist (it has {count} partitions)."
                )

    # --- table handle and offset index --------------------------------------------------------------------------------

    def _open(self) -> DeltaTable:
        if self._table is None:
            self._table = create_topic_log(self._root, self._topic)
            self._checkpointer.restart_from(self._table.version())
        return self._table

    def _refreshed(self) -> DeltaTable:
        if self._table is None:
            return self._open()
        self._freshness.refresh(self._table)
        return self._table

    def _latest(self, table: DeltaTable) -> tuple[int, dict[int, PartitionOffsets]]:
        """The newest version this writer knows and the bounds there: its own last commit's, which the table handle
        has not read (a produce does not re-read the table), or the table's."""
        if self._cached[0] >= table.version():
            return self._cached
        return table.version(), self._offsets_at(table)

    def _files_at(self, table: DeltaTable) -> PartitionFiles | None:
        if self._files is None or self._files.version != table.version():
            self._files = PartitionFiles.of(table)
        return self._files

    def _filesystem(self, table: DeltaTable) -> pa_fs.FileSystem:
        if self._table_filesystem is None:
            self._table_filesystem = filesystem_of(table)
        return self._table_filesystem

    def _offsets_at(self, table: DeltaTable) -> dict[int, PartitionOffsets]:
        version = table.version()
        if self._cached[0] != version:
            self._cached = (version, offsets_at_version(table, self._cached, version))
        return self._cached[1]
