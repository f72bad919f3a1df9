"""The data files of the ``groupcoord-delta`` sink: one Parquet file per topic-partition per task, with the offsets
it holds, so that the driver's commit can keep a file whole, drop it whole, or rewrite only its tail.

Executors write the files into the table's directory without committing them (:func:`write_partition_files`); the
driver adds the ones it keeps to the Delta log in one commit. A file that no commit adds is never read, and is
removed by ``abort`` or by a later vacuum. The table is a :class:`~groupcoord.storage.location.TableLocation`: a
local directory or an S3 prefix, written through pyarrow's filesystem of either (on S3 a file is one PUT of its
bytes, written in memory first).
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from deltalake.transaction import AddAction

from groupcoord.storage.tables import Where, table_filesystem

KEY_COLUMNS = ("topic", "partition", "offset")
"""The columns every ``groupcoord-delta`` table has: which record of which partition a row holds."""

_STATS_COLUMNS = KEY_COLUMNS


@dataclass(frozen=True)
class PartitionFile:
    """One written, not yet committed, data file holding rows of one topic-partition (``first``..``last``)."""

    topic: str
    partition: int
    path: str  # relative to the table's directory
    size: int
    rows: int
    first: int
    last: int
    stats: str
    modification_time: int

    def add_action(self) -> AddAction:
        """The Delta ``add`` action that commits this file."""
        return AddAction(self.path, self.size, {}, self.modification_time, True, self.stats)


def write_partition_files(batches: Iterable[pa.RecordBatch], table_dir: Where,
                          schema: pa.Schema) -> list[PartitionFile]:
    """Write the rows of ``batches`` into ``table_dir``, one file per topic-partition, rows ordered by offset."""
    received = [b for b in batches if b.num_rows]
    if not received:
        return []
    table = pa.Table.from_batches(received).select(schema.names).cast(schema)
    single = _single_partition(table)
    if single is not None:  # a task's usual input, one offset range read in order: written as it came
        return [write_file(table, table_dir, *single)]
    keys = table.group_by(["topic", "partition"]).aggregate([]).to_pylist()
    written = []
    for key in sorted(keys, key=lambda k: (k["topic"], k["partition"])):
        rows = table.filter((pc.field("topic") == key["topic"]) & (pc.field("partition") == key["partition"]))
        written.append(write_file(rows.sort_by("offset"), table_dir, key["topic"], key["partition"]))
    return written


def _single_partition(table: pa.Table) -> tuple[str, int] | None:
    """``(topic, partition)`` when every row of ``table`` is of that one topic-partition and the offsets ascend;
    else ``None``."""
    topics, partitions = pc.min_max(table.column("topic")).as_py(), pc.min_max(table.column("partition")).as_py()
    if topics["min"] != topics["max"] or partitions["min"] != partitions["max"] or topics["min"] is None \
            or partitions["min"] is None or table.column("topic").null_count or table.column("partition").null_count:
        return None
    offsets = table.column("offset")
    if offsets.null_count:
        return None
    values = offsets.combine_chunks().to_numpy()
    if len(values) > 1 and not (values[1:] > values[:-1]).all():
        return None
    return str(topics["min"]), int(partitions["min"])


def write_file(rows: pa.Table, table_dir: Where, topic: str, partition: int) -> PartitionFile:
    """Write ``rows`` (one partition's, sorted by offset) as one new Parquet file in ``table_dir``."""
    name = f"part-{uuid.uuid4().hex}-gc-{partition}.snappy.parquet"
    buffer = pa.BufferOutputStream()
    pq.write_table(rows, buffer, compression="snappy")
    data = buffer.getvalue()
    with table_filesystem(table_dir).open_output_stream(name) as target:
        target.write(data)
    offsets = rows.column("offset")
    first, last = int(pc.min(offsets).as_py()), int(pc.max(offsets).as_py())
    return PartitionFile(topic=topic, partition=partition, path=name, size=data.size,
                         rows=rows.num_rows, first=first, last=last, stats=_stats(rows),
                         modification_time=int(time.time() * 1000))


def trim_file(file: PartitionFile, table_dir: Where, keep_from: int) -> PartitionFile | None:
    """A new file holding the rows of ``file`` at offsets ``>= keep_from``; ``None`` when none are left."""
    if keep_from <= file.first:
        return file
    if keep_from > file.last:
        return None
    rows = pq.read_table(file.path, filesystem=table_filesystem(table_dir))
    return write_file(rows.filter(pc.field("offset") >= keep_from), table_dir, file.topic, file.partition)


def remove_files(files: Sequence[PartitionFile], table_dir: Where) -> None:
    """Delete written files that no commit added (best effort: a leftover file is never read)."""
    if not files:
        return
    filesystem = table_filesystem(table_dir)
    for file in files:
        with contextlib.suppress(FileNotFoundError):
            filesystem.delete_file(file.path)


def _stats(rows: pa.Table) -> str:
    """Delta's per-file statistics: the row count, and min, max and null count of the key columns."""
    minimum, maximum, nulls = {}, {}, {}
    for name in _STATS_COLUMNS:
        column = rows.column(name)
        bounds = pc.min_max(column).as_py()
        minimum[name], maximum[name] = bounds["min"], bounds["max"]
        nulls[name] = column.null_count
    return json.dumps({"numRecords": rows.num_rows, "minValues": minimum, "maxValues": maximum, "nullCount": nulls})
