"""The materialized state tables: their names, Arrow schemas, keys, and the schemas of their views.

Every table is append-only. Each row carries three bookkeeping columns besides its data:

- ``log_version`` and ``epoch``: the record-log version of the batch the row comes from and the writer's lease epoch;
- ``seq``: the position of the row's record within that batch, so rows of one batch keep their order;
- ``deleted``: the row records a deletion (a tombstone, or a group left without members); views drop these keys.

``(log_version, epoch, seq)`` orders the rows of one key: the greatest is the key's current row. The views
(:mod:`groupcoord.state.views`) keep the data columns and ``log_version``/``epoch``, without ``seq`` and ``deleted``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import pyarrow as pa

TableName = Literal["offsets", "groups", "members", "assignments", "acls"]

TIMESTAMP = pa.timestamp("us", tz="UTC")
"""Every timestamp column: microseconds, timezone-aware UTC (Delta's ``timestamp``; protocol (1,2))."""

ORDER_COLUMNS = ("log_version", "epoch", "seq")
"""The columns whose lexicographic order is the order in which rows were produced."""

_BOOKKEEPING = [
    pa.field("deleted", pa.bool_(), nullable=False),
    pa.field("log_version", pa.int64(), nullable=False),
    pa.field("epoch", pa.int64(), nullable=False),
    pa.field("seq", pa.int32(), nullable=False),
]
_VIEW_DROPS = frozenset({"deleted", "seq"})


@dataclass(frozen=True)
class StateTable:
    """One materialized table.

    ``keys`` identify what a view keeps one current entry of: with ``per_group`` the current entry of a group is
    *all* rows of its latest record (the members or assignments of its latest generation), otherwise it is the
    latest row per ``keys``.
    """

    name: TableName
    schema: pa.Schema
    keys: tuple[str, ...]
    per_group: bool = False

    @property
    def view_schema(self) -> pa.Schema:
        """The columns of this table's view: the table's, without ``deleted`` and ``seq``."""
        return pa.schema([f for f in self.schema if f.name not in _VIEW_DROPS])


OFFSETS = StateTable(
    "offsets",
    pa.schema([
        pa.field("group_id", pa.string(), nullable=False),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("offset", pa.int64()),
        pa.field("leader_epoch", pa.int32()),
        pa.field("metadata", pa.string()),
        pa.field("commit_time", TIMESTAMP),
        pa.field("expire_time", TIMESTAMP),
        pa.field("generation", pa.int32()),
        *_BOOKKEEPING,
    ]),
    keys=("group_id", "topic", "partition"),
)
"""Committed offsets, one row per commit (``deleted``: the offset was deleted or expired)."""

GROUPS = StateTable(
    "groups",
    pa.schema([
        pa.field("group_id", pa.string(), nullable=False),
        pa.field("generation", pa.int32()),
        pa.field("state", pa.string(), nullable=False),
        pa.field("protocol_type", pa.string()),
        pa.field("protocol", pa.string()),
        pa.field("leader", pa.string()),
        pa.field("member_count", pa.int32(), nullable=False),
        pa.field("updated_at", TIMESTAMP, nullable=False),
        *_BOOKKEEPING,
    ]),
    keys=("group_id",),
)
"""Groups, one row per completed generation (``deleted``: the group was deleted)."""

MEMBERS = StateTable(
    "members",
    pa.schema([
        pa.field("group_id", pa.string(), nullable=False),
        pa.field("generation", pa.int32()),
        pa.field("member_id", pa.string()),
        pa.field("group_instance_id", pa.string()),
        pa.field("client_id", pa.string()),
        pa.field("client_host", pa.string()),
        pa.field("session_timeout_ms", pa.int32()),
        pa.field("rebalance_timeout_ms", pa.int32()),
        pa.field("subscribed_topics", pa.list_(pa.string())),
        *_BOOKKEEPING,
    ]),
    keys=("group_id",),
    per_group=True,
)
"""Members per generation (a ``deleted`` row without a member: from this generation on the group has none)."""

ASSIGNMENTS = StateTable(
    "assignments",
    pa.schema([
        pa.field("group_id", pa.string(), nullable=False),
        pa.field("generation", pa.int32()),
        pa.field("member_id", pa.string()),
        pa.field("group_instance_id", pa.string()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        *_BOOKKEEPING,
    ]),
    keys=("group_id",),
    per_group=True,
)
"""Assigned partitions per generation (a ``deleted`` row without a partition: from this generation on the group
has no known assignment)."""

ACLS = StateTable(
    "acls",
    pa.schema([
        pa.field("resource_type", pa.string(), nullable=False),
        pa.field("resource_name", pa.string(), nullable=False),
        pa.field("pattern_type", pa.string(), nullable=False),
        pa.field("principal", pa.string(), nullable=False),
        pa.field("host", pa.string(), nullable=False),
        pa.field("operation", pa.string(), nullable=False),
        pa.field("permission", pa.string(), nullable=False),
        *_BOOKKEEPING,
    ]),
    keys=("resource_type", "resource_name", "pattern_type", "principal", "host", "operation", "permission"),
)
"""ACL bindings (Kafka's names: ``TOPIC``, ``PREFIXED``, ``READ``, ``ALLOW``), one row per creation or deletion
(``deleted``); format 6."""

STATE_TABLES: dict[TableName, StateTable] = {t.name: t for t in (OFFSETS, GROUPS, MEMBERS, ASSIGNMENTS, ACLS)}
"""Every materialized table by name."""
