"""Opening, creating and reading the local Delta tables of a state root.

Reads go through pyarrow's native local filesystem rather than delta-rs's default Python filesystem handler: with
the default handler, a process that scanned a table sometimes aborts at interpreter exit ("terminate called without
an active exception", exit code 134), a known delta-rs/pyarrow shutdown-order problem. State roots are always local,
so the native filesystem is both safe and faster. Partition values and per-file statistics still prune the scan.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pa_fs
from deltalake import DeltaTable
from deltalake.exceptions import CommitFailedError, DeltaError

FilterTuple = tuple[str, str, object]


def open_or_create(path: Path, schema: pa.Schema, *, partition_by: list[str] | None = None,
                   name: str | None = None, description: str | None = None) -> DeltaTable:
    """Open the Delta table at ``path``, creating it empty with ``schema`` first if it does not exist yet.

    Two processes may race to create it: the loser's create fails because version 0 exists, and it opens the
    winner's table instead. Tables are created on protocol (1,2) (no deletion vectors, no column mapping).
    """
    if not DeltaTable.is_deltatable(str(path)):
        path.mkdir(parents=True, exist_ok=True)
        try:
            DeltaTable.create(str(path), schema, mode="ignore", partition_by=partition_by, name=name,
                              description=description)
        except (CommitFailedError, DeltaError):
            if not DeltaTable.is_deltatable(str(path)):
                raise
    return DeltaTable(str(path))


def open_if_exists(path: Path) -> DeltaTable | None:
    """The Delta table at ``path``, or ``None`` when there is none yet."""
    return DeltaTable(str(path)) if DeltaTable.is_deltatable(str(path)) else None


def local_dataset(table: DeltaTable, *, where: list[FilterTuple] | None = None) -> ds.Dataset:
    """The table's current version as a pyarrow dataset on the native local filesystem.

    ``where`` prunes files by partition values and by min/max statistics (it selects files, not rows: filter the
    rows again when reading).
    """
    root = pa_fs.SubTreeFileSystem(_local_path(table), pa_fs.LocalFileSystem())
    return table.to_pyarrow_dataset(filesystem=root, file_pruning_predicate=where)  # type: ignore[arg-type]


def _local_path(table: DeltaTable) -> str:
    uri = table.table_uri
    return uri.removeprefix("file://") if uri.startswith("file://") else uri
