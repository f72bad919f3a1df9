"""The exactly-once Delta sink: every append carries one Delta app transaction per (group, topic, partition).

``app_id = "<group>/<topic>/<partition>"`` and its version is the end offset (next offset) of the records the
append holds for that partition. So the sink itself records how far each partition was ingested, atomically with
the data:

- rows below a partition's recorded version are already in the sink and are dropped from an append (a replayed
  batch after a crash between the sink commit and the offset commit writes nothing twice);
- two writers appending the same app id concurrently conflict in delta-rs (``CommitFailedError``: concurrent
  transaction); the loser's append is dropped as a whole (:class:`AppendOutcome` ``conflict``) and it re-reads the
  sink before reading the source again.

Sink columns: ``topic, partition, offset, timestamp, key, value``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable, write_deltalake
from deltalake.exceptions import CommitFailedError
from kafka.structs import TopicPartition

from groupcoord.storage.tables import local_dataset, open_or_create
from groupcoord.topics import app_transactions

log = logging.getLogger("groupcoord.ingest.sink")

SINK_SCHEMA = pa.schema([
    pa.field("topic", pa.string(), nullable=False),
    pa.field("partition", pa.int32(), nullable=False),
    pa.field("offset", pa.int64(), nullable=False),
    pa.field("timestamp", pa.timestamp("us", tz="UTC"), nullable=False),
    pa.field("key", pa.binary(), nullable=True),
    pa.field("value", pa.binary(), nullable=True),
])


def app_id(group_id: str, tp: TopicPartition) -> str:
    """The Delta app transaction id of one partition of one group: ``"<group>/<topic>/<partition>"``."""
    return app_transactions.app_id(group_id, tp.topic, tp.partition)


@dataclass(frozen=True)
class PartitionBatch:
    """Records of one partition read from ``start``; ``end`` is the offset after the last record."""

    tp: TopicPartition
    start: int
    end: int
    records: pa.Table

    @property
    def count(self) -> int:
        """How many records the batch holds."""
        return int(self.records.num_rows)


@dataclass(frozen=True)
class AppendOutcome:
    """What one append did: ``written`` (with ``rows`` new rows, possibly 0 when every row was already there and
    only transactions moved), ``skipped`` (the sink already held it all) or ``conflict`` (a concurrent writer of
    the same app id won; nothing was written). ``versions`` are the sink's versions after the append."""

    status: Literal["written", "skipped", "conflict"]
    rows: int
    versions: Mapping[TopicPartition, int | None]


class DeltaSink:
    """The Delta table at ``path``, appended to by the members of ``group_id``. One instance per member."""

    def __init__(self, path: str | Path, group_id: str) -> None:
        self._path = Path(str(path).removeprefix("file://"))
        self._group_id = group_id
        self._table: DeltaTable | None = None

    @property
    def path(self) -> Path:
        """Where the table is."""
        return self._path

    def table(self) -> DeltaTable:
        """The table at its latest version (created empty on first use)."""
        if self._table is None:
            self._table = open_or_create(self._path, SINK_SCHEMA, name="groupcoord sink")
        else:
            self._table.update_incremental()
        return self._table

    def versions(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int | None]:
        """The sink's transaction version (next offset to ingest) of each partition; ``None`` when never written."""
        return self._versions_at(self.table(), partitions)

    def _versions_at(self, table: DeltaTable, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int | None]:
        wanted = list(partitions)
        held = app_transactions.transaction_versions(table, self._group_id, ((tp.topic, tp.partition) for tp in wanted))
        return {tp: held[(tp.topic, tp.partition)] for tp in wanted}

    def append(self, batches: Iterable[PartitionBatch]) -> AppendOutcome:
        """Append the batches in one commit carrying their app transactions (see the module docstring)."""
        table = self.table()
        pending = [b for b in batches if b.end > b.start]
        current = self._versions_at(table, (b.tp for b in pending))
        fresh = [_trimmed(b, held) for b in pending if (held := current[b.tp]) is None or held < b.end]
        if not fresh:
            return AppendOutcome("skipped", 0, current)
        rows = pa.concat_tables([_sink_rows(b) for b in fresh])
        try:
            self._commit(table, rows, {(b.tp.topic, b.tp.partition): b.end for b in fresh})
        except CommitFailedError as exc:
            log.info("sink %s: a concurrent writer of the same partitions won (%s); batch dropped", self._path, exc)
            return AppendOutcome("conflict", 0, self.versions(b.tp for b in pending))
        return AppendOutcome("written", rows.num_rows, {**current, **{b.tp: b.end for b in fresh}})

    def _commit(self, table: DeltaTable, rows: pa.Table, ends: Mapping[tuple[str, int], int]) -> None:
        """One append commit based on ``table``'s version; a same-app-id winner since then makes it fail."""
        write_deltalake(table, rows, mode="append",
                        commit_properties=app_transactions.offsets_commit(self._group_id, ends))

    def read_all(self) -> pa.Table:
        """Every row of the sink (for checks and tests)."""
        return local_dataset(self.table()).to_table().select(SINK_SCHEMA.names).cast(SINK_SCHEMA)

    def row_count(self) -> int:
        """Rows in the sink, from the Delta log's per-file statistics (no data read)."""
        actions = pa.table(self.table().get_add_actions(flatten=True))
        if actions.num_rows == 0:
            return 0
        return int(pc.sum(actions.column("num_records")).as_py() or 0)


def _trimmed(batch: PartitionBatch, held: int | None) -> PartitionBatch:
    """Drop the rows the sink already holds (offsets below its version)."""
    if held is None or held <= batch.start:
        return batch
    kept = batch.records.filter(pc.field("offset") >= held)
    return PartitionBatch(batch.tp, held, batch.end, kept)


def _sink_rows(batch: PartitionBatch) -> pa.Table:
    records = batch.records
    topic = pa.array([batch.tp.topic] * records.num_rows, pa.string())
    return pa.table({
        "topic": topic,
        "partition": records.column("partition").cast(pa.int32()),
        "offset": records.column("offset").cast(pa.int64()),
        "timestamp": records.column("timestamp").cast(pa.timestamp("us", tz="UTC")),
        "key": records.column("key").cast(pa.binary()),
        "value": records.column("value").cast(pa.binary()),
    }, schema=SINK_SCHEMA)
