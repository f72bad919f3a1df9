"""A ``groupcoord-delta`` table as its readers see it: how far each partition of a group was written, and its rows.

The writers are :mod:`groupcoord.sink.commit`'s; this is the reading side, for progress reports, lag tables and
checks. A table that does not exist yet reads as empty (no versions, no rows).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable
from kafka.structs import TopicPartition

from groupcoord.sink.options import location_text
from groupcoord.storage.location import TableLocation, parse_location
from groupcoord.storage.tables import is_table, open_table, table_dataset
from groupcoord.topics.app_transactions import transaction_versions


class SinkTable:
    """The table at ``path`` (a local path, ``file:``, ``s3://`` or ``s3a://``), read for the partitions of
    ``group_id``; ``storage`` are the ``storage.*`` settings of an S3 table."""

    def __init__(self, path: str | Path | TableLocation, group_id: str,
                 storage: Mapping[str, str] | None = None) -> None:
        self._location = path if isinstance(path, TableLocation) else \
            parse_location(location_text(str(path), "sink"), settings=storage)
        self._group_id = group_id
        self._table: DeltaTable | None = None

    @property
    def path(self) -> Path:
        """Where the table is, when it is a local directory (:attr:`location` names any table)."""
        return self._location.local_path

    @property
    def location(self) -> TableLocation:
        """Where the table is: a local directory or an S3 prefix."""
        return self._location

    def table(self) -> DeltaTable | None:
        """The table at its latest version; ``None`` while it does not exist."""
        if self._table is None:
            if not is_table(self._location):
                return None
            self._table = open_table(self._location)
        else:
            self._table.update_incremental()
        return self._table

    def versions(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int | None]:
        """Each partition's app transaction version (the next offset to write); ``None`` when never written."""
        wanted = list(partitions)
        table = self.table()
        if table is None:
            return dict.fromkeys(wanted)
        held = transaction_versions(table, self._group_id, ((tp.topic, tp.partition) for tp in wanted))
        return {tp: held[(tp.topic, tp.partition)] for tp in wanted}

    def read_all(self, columns: Iterable[str] | None = None) -> pa.Table:
        """Every row (of ``columns``, else all of them); no rows (of null type) while the table does not exist."""
        wanted = list(columns) if columns is not None else None
        table = self.table()
        if table is None:
            return pa.table({name: pa.array([], pa.null()) for name in wanted or ()})
        return table_dataset(table).to_table(columns=wanted)

    def row_count(self) -> int:
        """Rows in the table, from the Delta log's per-file statistics (no data read)."""
        table = self.table()
        if table is None:
            return 0
        actions = pa.table(table.get_add_actions(flatten=True))
        if actions.num_rows == 0:
            return 0
        return int(pc.sum(actions.column("num_records")).as_py() or 0)
