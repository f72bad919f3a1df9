"""The offset checkpoint job's logic: snapshot committed offsets with their lag, feed the weighted assignor, judge
each group with Burrow's rules. ``jobs/offset_checkpoint.py`` is the spark-submit entry that calls
:func:`run_checkpoint`.

One run:

1. reads the ``offsets`` state view and the log-end offset of every topic it names (Delta statistics, no scan);
2. computes the lag as one Spark DataFrame (:func:`groupcoord.admin.lag.lag_frame`), collected once via Arrow;
3. writes the snapshot to the ``offset_checkpoints`` Delta table in one commit that replaces the rows of the same run
   id, so re-running a run id never duplicates it (:data:`CHECKPOINT_SCHEMA`);
4. overwrites the state root's ``partition_weights`` table with ``weight = 1 + lag`` per (group, topic, partition)
   (:data:`WEIGHTS_SCHEMA`): the ``weight`` column the weighted assignor balances; the 1 keeps caught-up partitions
   spread like a plain count;
5. evaluates Burrow's rules (:mod:`groupcoord.admin.burrow`) over the last ``checkpoint.window`` runs.

The job is the only writer of its two tables, and a Spark job, so it writes them with delta-spark (the session needs
Delta's jars and SQL extension). It creates them with their non-null columns and pinned to protocol (1,2), no deletion
vectors and no column mapping (:data:`TABLE_PROPERTIES`), so delta-rs (the weighted assignor, the CLI) reads them
too. Two runs of the job at the same time on one state root are not supported: delta-spark's local log store is
safe only inside one JVM, and its S3 log store (``S3SingleDriverLogStore``, for a root on S3, through ``s3a://``)
inside one driver (``docs/state-tables.md``).
"""

from __future__ import annotations

import datetime as dt
import re
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from groupcoord.admin.burrow import GroupStatus, Observation, PartitionStatus, group_status, partition_status
from groupcoord.admin.lag import lag_frame, log_end_table
from groupcoord.admin.log_offsets import log_bounds, partition_counts
from groupcoord.config.binding import KeyedConfig, from_key
from groupcoord.state.schema import GROUPS, OFFSETS, TIMESTAMP
from groupcoord.state.views import read_view
from groupcoord.state_root import StateRoot
from groupcoord.storage.location import TableLocation, parse_location
from groupcoord.storage.tables import open_if_exists, table_dataset

if TYPE_CHECKING:
    from pyspark.sql import DataFrameWriter, SparkSession

CHECKPOINT_TABLE = "offset_checkpoints"

CHECKPOINT_SCHEMA = pa.schema([
    pa.field("run_id", pa.string(), nullable=False),
    pa.field("run_time", TIMESTAMP, nullable=False),
    pa.field("group_id", pa.string(), nullable=False),
    pa.field("topic", pa.string(), nullable=False),
    pa.field("partition", pa.int32(), nullable=False),
    pa.field("offset", pa.int64()),
    pa.field("log_end_offset", pa.int64()),
    pa.field("lag", pa.int64()),
    pa.field("commit_time", TIMESTAMP),
])
"""One row per (run id, group, topic, partition); ``log_end_offset`` and ``lag`` are null for an unknown topic."""

WEIGHTS_SCHEMA = pa.schema([
    pa.field("group_id", pa.string(), nullable=False),
    pa.field("topic", pa.string(), nullable=False),
    pa.field("partition", pa.int32(), nullable=False),
    pa.field("weight", pa.float64(), nullable=False),
    pa.field("lag", pa.int64()),
    pa.field("run_id", pa.string(), nullable=False),
    pa.field("updated_at", TIMESTAMP, nullable=False),
])
"""The ``partition_weights`` table: the latest run's weight per (group, topic, partition)."""

TABLE_PROPERTIES = {
    "delta.minReaderVersion": "1",
    "delta.minWriterVersion": "2",
    "delta.enableDeletionVectors": "false",
    "delta.columnMapping.mode": "none",
}
"""Properties the job's tables are created with: protocol (1,2), which delta-rs and every Delta reader can open,
even if the Spark session's defaults would turn deletion vectors or column mapping on."""

_RUN_ID = re.compile(r"^[A-Za-z0-9._:+-]{1,128}$")


class CheckpointError(ValueError):
    """The checkpoint run cannot proceed (a malformed run id); one line for the user."""


@dataclass(frozen=True, kw_only=True)
class CheckpointConfig(KeyedConfig):
    """Settings of the checkpoint job, from ``checkpoint.*`` keys."""

    window: int = field(default=10, metadata=from_key("checkpoint.window"))
    table: str | None = field(default=None, metadata=from_key("checkpoint.table"))
    prometheus_file: str | None = field(default=None, metadata=from_key("checkpoint.prometheus.file"))

    def table_path(self, root: StateRoot) -> TableLocation:
        """Where the ``offset_checkpoints`` table lives: ``checkpoint.table`` (a path or an ``s3://`` / ``s3a://``
        URI, with the root's storage settings), else ``<root>/offset_checkpoints``."""
        if self.table:
            return parse_location(self.table, settings=root.location.settings)
        return root.location / CHECKPOINT_TABLE


@dataclass(frozen=True)
class PartitionReport:
    """One partition at this run, with its Burrow status."""

    topic: str
    partition: int
    offset: int | None
    log_end_offset: int | None
    lag: int | None
    status: PartitionStatus


@dataclass(frozen=True)
class GroupReport:
    """One group at this run: its status, total lag, member count and partitions."""

    group_id: str
    status: GroupStatus
    lag_sum: int
    members: int
    partitions: tuple[PartitionReport, ...]


@dataclass(frozen=True)
class CheckpointResult:
    """What a run wrote and found."""

    run_id: str
    run_time: dt.datetime
    rows: int
    table_path: TableLocation
    groups: tuple[GroupReport, ...]


def new_run_id(now: dt.datetime) -> str:
    """A run id that sorts by time: ``20240501T100000.123456Z-1a2b3c``."""
    return f"{now.astimezone(dt.UTC):%Y%m%dT%H%M%S.%fZ}-{uuid.uuid4().hex[:6]}"


def run_checkpoint(spark: SparkSession, root: StateRoot, *, config: CheckpointConfig | None = None,
                   run_id: str | None = None, now: dt.datetime | None = None) -> CheckpointResult:
    """Run one checkpoint (see the module docs) and return its report."""
    config = config or CheckpointConfig()
    run_time = (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC)
    run_id = run_id or new_run_id(run_time)
    if not _RUN_ID.match(run_id):
        raise CheckpointError(f"run id {run_id!r} must be 1-128 characters of letters, digits and . _ : + -")
    offsets = read_view(root, OFFSETS)
    counts = partition_counts(root)
    topics = {t for t in pc.unique(offsets.column("topic")).to_pylist() if t in counts}
    snapshot = (lag_frame(spark, offsets, log_end_table(log_bounds(root, topics)), run_id=run_id, run_time=run_time)
                .toArrow().select(CHECKPOINT_SCHEMA.names).cast(CHECKPOINT_SCHEMA))
    path = config.table_path(root)
    write_snapshot(spark, path, snapshot, run_id)
    write_weights(spark, root, snapshot, run_id=run_id, run_time=run_time)
    window = read_window(path, config.window)
    members = {r["group_id"]: r["member_count"] for r in read_view(root, GROUPS).to_pylist()}
    return CheckpointResult(run_id, run_time, snapshot.num_rows, path, evaluate(snapshot, window, members))


def write_snapshot(spark: SparkSession, path: TableLocation, snapshot: pa.Table, run_id: str) -> None:
    """Replace the rows of ``run_id`` in the checkpoint table with ``snapshot`` in one Delta commit (delta-spark's
    ``replaceWhere``: a re-run of the run id rewrites its rows, other runs' rows stay)."""
    writer = _writer(spark, path, snapshot, CHECKPOINT_SCHEMA,
                     description="groupcoord offset checkpoints: committed offsets and lag per run")
    writer.mode("overwrite").option("replaceWhere", f"run_id = '{run_id}'").save(path.spark_uri)


def write_weights(spark: SparkSession, root: StateRoot, snapshot: pa.Table, *, run_id: str,
                  run_time: dt.datetime) -> None:
    """Overwrite ``partition_weights`` with ``1 + lag`` per partition of this run (lag unknown: weight 1), in one
    Delta commit."""
    lag = pc.fill_null(snapshot.column("lag"), 0)
    weights = pa.table({
        "group_id": snapshot.column("group_id"),
        "topic": snapshot.column("topic"),
        "partition": snapshot.column("partition"),
        "weight": pc.add(pc.cast(lag, pa.float64()), 1.0),
        "lag": snapshot.column("lag"),
        "run_id": pa.array([run_id] * snapshot.num_rows, pa.string()),
        "updated_at": pa.array([run_time] * snapshot.num_rows, TIMESTAMP),
    }).cast(WEIGHTS_SCHEMA)
    path = root.partition_weights_path
    writer = _writer(spark, path, weights, WEIGHTS_SCHEMA,
                     description="groupcoord partition weights (1 + lag) for the weighted assignor")
    writer.mode("overwrite").save(path.spark_uri)


def _writer(spark: SparkSession, path: TableLocation, rows: pa.Table, schema: pa.Schema, *,
            description: str) -> DataFrameWriter:
    """A delta-spark writer of ``rows`` into the table at ``path``, which is created first (empty, with
    ``schema``'s non-null columns and :data:`TABLE_PROPERTIES`) if it does not exist."""
    from delta.tables import DeltaTable as SparkDeltaTable
    from pyspark.sql.pandas.types import from_arrow_schema

    from groupcoord.spark.s3a import use_s3a

    use_s3a(spark, path)
    spark_schema = from_arrow_schema(schema)
    # A DataFrame write would create the table with every column nullable: the builder keeps NOT NULL.
    builder = SparkDeltaTable.createIfNotExists(spark).location(path.spark_uri).addColumns(spark_schema)
    for key, value in TABLE_PROPERTIES.items():
        builder = builder.property(key, value)
    builder.comment(description).execute()
    return spark.createDataFrame(rows.select(schema.names).cast(schema), spark_schema).write.format("delta")


def read_window(path: Path | TableLocation, runs: int) -> pa.Table:
    """The rows of the latest ``runs`` runs of the checkpoint table, ordered by run time."""
    table = open_if_exists(path)
    rows = CHECKPOINT_SCHEMA.empty_table() if table is None else table_dataset(table).to_table(
        columns=CHECKPOINT_SCHEMA.names)
    if rows.num_rows == 0:
        return CHECKPOINT_SCHEMA.empty_table()
    run_list = rows.group_by("run_id").aggregate([("run_time", "max")]).sort_by([("run_time_max", "descending")])
    latest = run_list.column("run_id").slice(0, runs)
    return rows.filter(pc.is_in(rows.column("run_id"), value_set=latest)).sort_by("run_time").cast(CHECKPOINT_SCHEMA)


def evaluate(snapshot: pa.Table, window: pa.Table, members: dict[str, int]) -> tuple[GroupReport, ...]:
    """The report of every group in ``snapshot`` or ``members``, partitions judged over ``window``."""
    history: dict[tuple[str, str, int], list[Observation]] = defaultdict(list)
    for row in window.to_pylist():
        if row["offset"] is not None and row["lag"] is not None:
            history[row["group_id"], row["topic"], row["partition"]].append(
                Observation(row["run_time"], row["offset"], row["lag"], row["commit_time"]))
    by_group: dict[str, list[PartitionReport]] = defaultdict(list)
    for row in snapshot.sort_by([("group_id", "ascending"), ("topic", "ascending"),
                                 ("partition", "ascending")]).to_pylist():
        key = (row["group_id"], row["topic"], row["partition"])
        by_group[row["group_id"]].append(PartitionReport(
            row["topic"], row["partition"], row["offset"], row["log_end_offset"], row["lag"],
            partition_status(history.get(key, []))))
    reports = []
    for group_id in sorted(set(by_group) | set(members)):
        partitions = tuple(by_group.get(group_id, ()))
        reports.append(GroupReport(group_id, group_status(p.status for p in partitions),
                                   sum(p.lag or 0 for p in partitions), members.get(group_id, 0), partitions))
    return tuple(reports)
