"""The current state in a materialized table: the latest row per key, deletions dropped (pure Arrow).

For ``offsets`` and ``groups`` the view keeps the latest row of every key (``(group_id, topic, partition)``,
``group_id``) unless that row is a deletion. For ``members`` and ``assignments`` it keeps, per group, all rows of the
group's latest record, i.e. of its latest generation, unless that record left the group without members or
assignments. "Latest" is the greatest ``(log_version, epoch, seq)``.

:func:`read_view` reads a table with delta-rs, at a point of its history, and reduces it; Spark's views
(:mod:`groupcoord.spark.state`) and the materializer's rebuild both use it.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from groupcoord.state.history import AsOf, open_table
from groupcoord.state.schema import ORDER_COLUMNS, StateTable
from groupcoord.state_root import StateRoot
from groupcoord.storage.tables import table_dataset

_ORDER = "__order"
_SORT_COLUMNS = ("group_id", "topic", "partition", "member_id")


def read_rows(root: StateRoot, table: StateTable, *, as_of: AsOf | None = None) -> pa.Table:
    """Every row of ``table`` as of ``as_of`` (empty, with the table's schema, when it did not exist)."""
    delta = open_table(root.state_table_path(table.name), as_of)
    if delta is None:
        return table.schema.empty_table()
    # Through the native local filesystem: delta-rs's own reader can abort the process at exit (rc 134).
    return table_dataset(delta).to_table(columns=table.schema.names).cast(table.schema)


def read_view(root: StateRoot, table: StateTable, *, as_of: AsOf | None = None) -> pa.Table:
    """The view of ``table`` as of ``as_of`` (see the module docs), with ``table.view_schema``."""
    return current_view(table, read_rows(root, table, as_of=as_of))


def current_view(table: StateTable, rows: pa.Table) -> pa.Table:
    """Reduce ``rows`` of ``table`` to its view: current entries only, no deletions, sorted by identity."""
    rows = rows.select(table.schema.names).cast(table.schema)
    if rows.num_rows == 0:
        return table.view_schema.empty_table()
    ordered = rows.sort_by([(c, "ascending") for c in ORDER_COLUMNS])
    ordered = ordered.append_column(_ORDER, pa.array(range(ordered.num_rows), pa.int64()))
    last = ordered.group_by(list(table.keys)).aggregate([(_ORDER, "max")]).column(f"{_ORDER}_max")
    current = ordered.take(last)
    if table.per_group:
        current = ordered.take(_rows_of_records(ordered, current, table.keys))
    current = current.filter(pc.invert(current.column("deleted")))
    view = current.select(table.view_schema.names).cast(table.view_schema)
    sort = [c for c in _SORT_COLUMNS if c in table.view_schema.names] or list(table.keys)  # acls: by its keys
    return view.sort_by([(c, "ascending") for c in sort])


def _rows_of_records(ordered: pa.Table, latest: pa.Table, keys: tuple[str, ...]) -> pa.ChunkedArray:
    """Positions in ``ordered`` of every row sharing a record identity (keys and order columns) with ``latest``."""
    identity = [*keys, *ORDER_COLUMNS]
    # Join on the identity columns alone: Arrow joins cannot carry list columns (subscribed_topics) along.
    matched = ordered.select([*identity, _ORDER]).join(latest.select(identity), keys=identity, join_type="inner")
    return matched.column(_ORDER)
