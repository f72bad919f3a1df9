"""The coordinator's state as Spark DataFrames: committed offsets, groups, members and assignments.

Each function reads one materialized Delta table of the state root with delta-rs, reduces it to the current state
(the latest row per key, deletions dropped; see :mod:`groupcoord.state.views`) and hands the Arrow result to
``spark.createDataFrame``. No Delta jars are needed.

``as_of`` travels in time: a Delta version of that table (each table has its own versions; ``log_version`` in the
rows is common to all) or a time, as a ``datetime`` or an ISO-8601 string (UTC when it has no zone). A point older
than the kept history (``spark.groupcoord.history.retention.hours``) raises :class:`StateHistoryError` naming the
oldest available version and time. A table that no coordinator has written yet gives an empty DataFrame with the
documented schema (``docs/state-tables.md``).

Example: who owned ``events`` partition 7 at 10:00? ::

    assignments(spark, "/data/gc", as_of="2024-05-01T10:00:00Z").where("topic = 'events' AND partition = 7")
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pyspark.sql.pandas.types import from_arrow_schema

from groupcoord.state.history import AsOf, StateHistoryError
from groupcoord.state.schema import ASSIGNMENTS, GROUPS, MEMBERS, OFFSETS, STATE_TABLES, StateTable, TableName
from groupcoord.state.views import read_view
from groupcoord.state_root import StateRoot

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

__all__ = ["StateHistoryError", "assignments", "groups", "members", "offsets", "view_schema"]

Root = StateRoot | str | Path
"""A state root, opened or as a path."""


def offsets(spark: SparkSession, root: Root, as_of: AsOf | None = None) -> DataFrame:
    """Committed offsets: one row per group, topic and partition (columns in ``docs/state-tables.md``)."""
    return _view(spark, root, OFFSETS, as_of)


def groups(spark: SparkSession, root: Root, as_of: AsOf | None = None) -> DataFrame:
    """Groups at their latest completed generation (``state`` Stable or Empty); deleted groups are absent."""
    return _view(spark, root, GROUPS, as_of)


def members(spark: SparkSession, root: Root, as_of: AsOf | None = None) -> DataFrame:
    """The members of each group's latest generation; a group without members has no rows."""
    return _view(spark, root, MEMBERS, as_of)


def assignments(spark: SparkSession, root: Root, as_of: AsOf | None = None) -> DataFrame:
    """The partitions assigned in each group's latest generation, one row per member and partition (decoded from
    the ConsumerProtocol assignment; groups of other protocol types have no rows)."""
    return _view(spark, root, ASSIGNMENTS, as_of)


def view_schema(table: TableName) -> StructType:
    """The Spark schema of the view of ``table`` (``offsets``, ``groups``, ``members`` or ``assignments``)."""
    return from_arrow_schema(STATE_TABLES[table].view_schema)


def _view(spark: SparkSession, root: Root, table: StateTable, as_of: AsOf | None) -> DataFrame:
    state_root = root if isinstance(root, StateRoot) else StateRoot.open(root)
    return spark.createDataFrame(read_view(state_root, table, as_of=as_of))
