"""Reading a range of one partition of a topic log straight from its data files, with the files a consumer is
reading kept decoded in memory.

A pyarrow dataset over the whole table costs tens of milliseconds to build, and Fetch built one per partition per
request, then decoded the same data file again for each slice a consumer asked for. Here the data files of each
partition come from the table's add actions once per table version (:class:`PartitionFiles`: their offset ranges,
from the ``min.offset``/``max.offset`` statistics every writer of a topic log records), and a read opens only the
files overlapping its range through :class:`DecodedFiles`, a byte-bounded LRU of decoded files shared by the
process: a consumer moving through a file decodes it once. Files are immutable (a Delta data file is never
rewritten in place), so a cached file never goes stale; compaction only makes new files that later versions list.

Each decoded file is brought to the log's schema (columns missing from files of state format 1 as nulls, the
``partition`` column from the file's partition value, as Delta stores it in the path) and sorted by offset once.
"""

from __future__ import annotations

import bisect
import threading
from collections import OrderedDict
from dataclasses import dataclass
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.fs as pa_fs
import pyarrow.parquet as pq
from deltalake import DeltaTable

from groupcoord.topics.log_table import TOPIC_LOG_SCHEMA

DECODED_BYTES = 256 * 1024 * 1024
"""How many bytes of decoded data files a process keeps (the files consumers are reading)."""


@dataclass(frozen=True)
class DataFile:
    """One data file of a partition: its path relative to the table, and the offsets it holds, ``[start, end)``."""

    path: str
    start: int
    end: int


class PartitionFiles:
    """The data files of every partition at one table version, each partition's sorted by first offset."""

    def __init__(self, version: int, files: dict[int, list[DataFile]]) -> None:
        self.version = version
        self._files = files
        self._starts = {partition: [f.start for f in listed] for partition, listed in files.items()}

    @classmethod
    def of(cls, table: DeltaTable) -> PartitionFiles | None:
        """The files of ``table``'s current version; ``None`` when a file has no offset statistics (a file another
        Delta writer wrote with statistics off: then only a dataset scan knows where its offsets are)."""
        actions = pa.table(table.get_add_actions(flatten=True))
        files: dict[int, list[DataFile]] = {}
        if actions.num_rows:
            if "min.offset" not in actions.column_names or actions.column("min.offset").null_count:
                return None
            for path, partition, start, last in zip(
                    actions.column("path").to_pylist(), actions.column("partition.partition").to_pylist(),
                    actions.column("min.offset").to_pylist(), actions.column("max.offset").to_pylist(), strict=True):
                files.setdefault(int(partition), []).append(DataFile(path, int(start), int(last) + 1))
        for listed in files.values():
            listed.sort(key=lambda f: f.start)
        return cls(table.version(), files)

    def overlapping(self, partition: int, start: int, end: int) -> list[DataFile]:
        """The files of ``partition`` holding offsets in ``[start, end)``, in offset order."""
        listed = self._files.get(partition, [])
        first = max(bisect.bisect_right(self._starts.get(partition, []), start) - 1, 0)
        return [f for f in listed[first:] if f.start < end and f.end > start]


class DecodedFiles:
    """Decoded data files by ``(table, path)``, least recently used first out past ``budget`` bytes."""

    def __init__(self, budget: int = DECODED_BYTES) -> None:
        self._budget = budget
        self._files: OrderedDict[tuple[str, str], pa.Table] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, table_uri: str, filesystem: pa_fs.FileSystem, data_file: DataFile, partition: int) -> pa.Table:
        """The rows of ``data_file`` (a file of ``partition``) in the log's schema, sorted by offset."""
        key = (table_uri, data_file.path)
        with self._lock:
            cached = self._files.get(key)
            if cached is not None:
                self._files.move_to_end(key)
                return cached
        decoded = _decode(filesystem, data_file.path, partition)
        with self._lock:
            if key not in self._files:
                self._files[key] = decoded
                self._bytes += decoded.nbytes
                while self._bytes > self._budget and len(self._files) > 1:
                    _, evicted = self._files.popitem(last=False)
                    self._bytes -= evicted.nbytes
        return decoded


DECODED = DecodedFiles()
"""The process's decoded files (every topic log of the process shares the budget)."""


def read_range(files: list[DataFile], decoded: DecodedFiles, table_uri: str, filesystem: pa_fs.FileSystem,
               partition: int, start: int, end: int) -> pa.Table:
    """The rows of ``partition`` with offsets in ``[start, end)`` held by ``files`` (see
    :meth:`PartitionFiles.overlapping`), in offset order."""
    slices = []
    for data_file in files:
        rows = decoded.get(table_uri, filesystem, data_file, partition)
        offsets = rows.column("offset")
        first = _search(offsets, start)
        last = _search(offsets, end)
        if last > first:
            slices.append(rows.slice(first, last - first))
    if not slices:
        return TOPIC_LOG_SCHEMA.empty_table()
    return slices[0] if len(slices) == 1 else pa.concat_tables(slices).combine_chunks()


def _search(offsets: pa.ChunkedArray, offset: int) -> int:
    """The index of the first offset at or above ``offset`` (``offsets`` sorted)."""
    values = offsets.chunk(0) if offsets.num_chunks == 1 else offsets.combine_chunks()
    return int(values.to_numpy(zero_copy_only=False).searchsorted(offset))


def _decode(filesystem: pa_fs.FileSystem, path: str, partition: int) -> pa.Table:
    raw = pq.read_table(unquote(path), filesystem=filesystem)  # add actions name files by URI-encoded paths
    columns = []
    for field in TOPIC_LOG_SCHEMA:
        if field.name == "partition":
            columns.append(pa.repeat(pa.scalar(partition, field.type), raw.num_rows))
        elif field.name in raw.column_names:
            columns.append(raw.column(field.name).cast(field.type))
        else:
            columns.append(pa.nulls(raw.num_rows, field.type))
    table = pa.Table.from_arrays(columns, schema=TOPIC_LOG_SCHEMA)
    table = table.combine_chunks()
    offsets = table.column("offset").to_numpy()
    if len(offsets) > 1 and not (offsets[1:] > offsets[:-1]).all():
        table = table.sort_by("offset").combine_chunks()
    return table
