"""The coordinator's state as Spark DataFrames: committed offsets, groups, members and assignments.

Each function reads one materialized Delta table of the state root with delta-spark (``spark.read.format("delta")``,
so the session needs Delta's jars and SQL extension, as every session :mod:`groupcoord.spark.session` builds has)
and reduces it, lazily and in Spark, to the current state: per key, the rows of the latest record (greatest
``(log_version, epoch, seq)``), deletions dropped. This is the same reduction as :mod:`groupcoord.state.views`
(delta-rs and Arrow, for the coordinator and the CLI), so both give the same rows.

``as_of`` travels in time: a Delta version of that table (each table has its own versions; ``log_version`` in the
rows is common to all) or a time, as a ``datetime`` or an ISO-8601 string (UTC when it has no zone). A time is
resolved to the newest version committed at or before it by :mod:`groupcoord.state.history` (Delta's rule), and
delta-spark then reads that version (``versionAsOf``): Delta's own ``timestampAsOf`` refuses a time after the latest
commit, where ``as_of=now`` must mean the latest state. A point older than the kept history
(``spark.groupcoord.history.retention.hours``) raises :class:`StateHistoryError` naming the oldest available version
and time. A table that no coordinator has written yet gives an empty DataFrame with the documented schema
(``docs/state-tables.md``).

A state root on S3 (``s3://`` or ``s3a://``) is read through Hadoop's S3A filesystem: the views set the bucket's
S3A settings in the session (:func:`groupcoord.spark.s3a.use_s3a`: endpoint and region, never a secret), and the
session needs the ``s3`` jars from its start (:func:`groupcoord.spark.s3a.spark_conf`) and the credentials in its
JVMs' environment (README "State root on S3").

Example: who owned ``events`` partition 7 at 10:00? ::

    assignments(spark, "/data/gc", as_of="2024-05-01T10:00:00Z").where("topic = 'events' AND partition = 7")
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.window import Window

from groupcoord.state.history import AsOf, StateHistoryError, open_table
from groupcoord.state.schema import (
    ACLS,
    ASSIGNMENTS,
    GROUPS,
    MEMBERS,
    OFFSETS,
    ORDER_COLUMNS,
    STATE_TABLES,
    StateTable,
    TableName,
)
from groupcoord.state_root import StateRoot
from groupcoord.storage.location import TableLocation, as_location
from groupcoord.storage.tables import is_table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

__all__ = ["StateHistoryError", "assignments", "groups", "members", "offsets", "view_schema"]

Root = StateRoot | str | Path
"""A state root, opened or as a path or URI (``s3://``, ``s3a://``)."""

_LATEST = "__latest"
_SORT_COLUMNS = ("group_id", "topic", "partition", "member_id")
"""The order of a view's rows, as in :func:`groupcoord.state.views.current_view`."""


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


def acls(spark: SparkSession, root: Root, as_of: AsOf | None = None) -> DataFrame:
    """The ACL bindings, one row each, by Kafka's names (``TOPIC``, ``LITERAL``, ``READ``, ``ALLOW``)."""
    return _view(spark, root, ACLS, as_of)


def session_storage(spark: SparkSession) -> dict[str, str]:
    """The session's ``spark.groupcoord.storage.*`` settings, by short name (a root given as a URI is opened with
    them)."""
    from groupcoord.config import PREFIX
    from groupcoord.spark.registration import session_groupcoord_conf

    return {key.removeprefix(PREFIX): value for key, value in session_groupcoord_conf(spark).items()
            if key.startswith(f"{PREFIX}storage.") and value}


def view_schema(table: TableName) -> StructType:
    """The Spark schema of the view of ``table`` (``offsets``, ``groups``, ``members``, ``assignments`` or
    ``acls``)."""
    return from_arrow_schema(STATE_TABLES[table].view_schema)


def read_table(spark: SparkSession, path: Path | TableLocation, as_of: AsOf | None = None) -> DataFrame | None:
    """Every row of the Delta table at ``path`` (a local directory, or a location on S3, read through ``s3a://``)
    as of ``as_of``, read by delta-spark; ``None`` when the table did not exist then. Raises
    :class:`StateHistoryError` for a point outside the kept history."""
    from groupcoord.spark.s3a import use_s3a

    location = as_location(path)
    use_s3a(spark, location)
    if as_of is None:
        return spark.read.format("delta").load(location.spark_uri) if is_table(location) else None
    resolved = open_table(location, as_of)
    if resolved is None:
        return None
    return spark.read.format("delta").option("versionAsOf", resolved.version()).load(location.spark_uri)


def _view(spark: SparkSession, root: Root, table: StateTable, as_of: AsOf | None) -> DataFrame:
    state_root = root if isinstance(root, StateRoot) else StateRoot.open(root, storage=session_storage(spark))
    rows = read_table(spark, state_root.state_table_path(table.name), as_of)
    schema = view_schema(table.name)
    if rows is None:
        return spark.createDataFrame([], schema)
    # The current entry of a key is every row of its latest record: one row for offsets and groups, all members
    # or assignments of the latest generation for the per-group tables.
    order = F.struct(*ORDER_COLUMNS)
    current = (rows.withColumn(_LATEST, F.max(order).over(Window.partitionBy(*table.keys)))
               .where((order == F.col(_LATEST)) & ~F.col("deleted")))
    # Casts keep the view's types; nullability is the Delta schema's, which is the view's (docs/state-tables.md).
    view = current.select(*(current[f.name].cast(f.dataType).alias(f.name) for f in schema.fields))
    return view.orderBy(*([name for name in _SORT_COLUMNS if name in schema.names] or list(table.keys)))
