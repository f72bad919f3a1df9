"""delta-spark, the reference reader, reads every Delta table of a real state root as delta-rs does.

The state root is made by the real thing: a coordinator (the record log through its constant-time append path,
the lease, the materialized state tables) with a kafka-python member and an admin client committing offsets, the
embedded topic log and catalog, an ingestion sink, and two runs of the offset checkpoint job (delta-spark's own
tables). Each table is then compared, delta-spark's rows against delta-rs's rows, at its latest version, at an
earlier version (``versionAsOf``) and at that version's commit time (``timestampAsOf``), and its ``DESCRIBE HISTORY``
against delta-rs's history. The latest rows and the history again on a copy after maintenance (checkpoints,
compaction, dropped record-log segments, vacuum with no retention) and after the coordinator appended on top of it.

Every read of delta-spark costs it a snapshot of the table (a few Spark jobs of its own), so each state root is read
in one go by a module fixture (:func:`read_both`): the ``DESCRIBE HISTORY`` of every table collected in one job, then
every table's reads and delta-rs's rows collected in one job, each row tagged with its table. The tests, one per
table, only compare what was collected, with chispa's schema and row comparisons.
"""

from __future__ import annotations

import datetime as dt
import functools
import shutil
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import pyarrow as pa
import pytest
from chispa import DataFramesNotEqualError
from chispa.rows_comparer import assert_basic_rows_equality
from chispa.schema_comparer import SchemasNotEqualError, assert_schema_equality
from deltalake import DeltaTable
from deltalake.exceptions import DeltaError
from kafka import KafkaConsumer
from kafka.structs import OffsetAndMetadata, TopicPartition
from pyspark.sql import functions as F

from groupcoord.admin.checkpoint import run_checkpoint
from groupcoord.admin.holder import admin_session
from groupcoord.host.background import BackgroundCoordinator
from groupcoord.ingest.config import SINK_SCHEMA
from groupcoord.log.delta import DeltaRecordLog
from groupcoord.log.maintenance import collect_garbage, run_log_maintenance
from groupcoord.sink.commit import append_batch, ensure_table
from groupcoord.sink.plan import BatchRange
from groupcoord.state.materializer import Materializer, MaterializerConfig
from groupcoord.state_root import StateRoot
from groupcoord.storage.maintenance import WRITE_GUARD
from groupcoord.storage.tables import compact_table, table_dataset
from groupcoord.topics import ProducerRecord, TopicCatalog, TopicLog
from groupcoord.topics.maintenance import maintain_topic_logs
from tests.cli.conftest import fast_config

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Row, SparkSession
    from pyspark.sql.types import StructType

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.slow]

TOPIC = "orders"
PARTITIONS = 3
SINK = "ingest_sink"
SPARK_WRITTEN = ("offset_checkpoints", "partition_weights")
"""The tables the checkpoint job writes with delta-spark (maintained with delta-spark's OPTIMIZE and VACUUM)."""
TABLES = ("log", "lease", "catalog", f"topics/{TOPIC}", "state/offsets", "state/groups", "state/members",
          "state/assignments", *SPARK_WRITTEN, SINK)
"""Every Delta table of the state root built here, relative to it."""

T = TypeVar("T")


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory, spark: SparkSession) -> StateRoot:
    """A state root in which every table has several commits (see the module docs)."""
    root = StateRoot.open(tmp_path_factory.mktemp("delta-spark") / "root", create=True)
    TopicCatalog(root).create(TOPIC, PARTITIONS)
    topic = TopicLog(root, TOPIC)
    for batch in range(3):
        topic.produce(ProducerRecord(f"v{batch}-{i}".encode(), key=f"k{i}".encode()) for i in range(12))
    _coordinate(root, rounds=4)
    ensure_table(str(root.path / SINK), SINK_SCHEMA)
    for start in (0, 4, 8):
        records = topic.read(0, start, 4)
        rows = records.append_column("topic", pa.array([TOPIC] * records.num_rows, pa.string()))
        append_batch(str(root.path / SINK), "live", {(TOPIC, 0): BatchRange(start, start + records.num_rows)},
                     rows.to_batches(), resets=dict)
    for run in range(2):
        run_checkpoint(spark, root, run_id=f"run-{run}")
    return root


@pytest.fixture(scope="module")
def written_reads(written: StateRoot, spark: SparkSession) -> dict[str, TableReads]:
    """Every table of ``written`` in both libraries: latest, ``versionAsOf``, ``timestampAsOf`` and history."""
    return read_both(spark, written.path, TABLES, as_of=True)


@pytest.fixture(scope="module")
def maintained(written: StateRoot, spark: SparkSession) -> StateRoot:
    """A copy of ``written`` (commit times kept) after every table's maintenance, then more coordinator appends."""
    copy = written.path.parent / "maintained"
    shutil.copytree(written.path, copy)
    root = StateRoot.open(copy)
    record_log = DeltaRecordLog(root.log_path, retention_minutes=1)
    run_log_maintenance(record_log, DeltaTable(str(root.log_path)).version())
    # As if the retention had passed: every file the maintenance removed is deleted now.
    collect_garbage(record_log, now=dt.datetime.now(dt.UTC) + dt.timedelta(minutes=2) + WRITE_GUARD)
    maintain_topic_logs(root, retention_hours=0)
    Materializer(root, config=MaterializerConfig(retention_hours=0)).maintain()
    for path in (root.lease_path, root.catalog_path, root.path / SINK):
        compact_table(path, retention_hours=0)
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        for name in SPARK_WRITTEN:
            spark.sql(f"OPTIMIZE delta.`{root.path / name}`")
            spark.sql(f"VACUUM delta.`{root.path / name}` RETAIN 0 HOURS")
    finally:
        spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
    _coordinate(root, rounds=2)  # the append path again, on top of the checkpoints and the compacted files
    return root


@pytest.fixture(scope="module")
def maintained_reads(maintained: StateRoot, spark: SparkSession) -> dict[str, TableReads]:
    """Every table of ``maintained`` in both libraries: the latest rows and the history."""
    return read_both(spark, maintained.path, TABLES, as_of=False)


def _coordinate(root: StateRoot, *, rounds: int) -> None:
    """A coordinator on ``root`` (snapshots and record-log checkpoints every few versions) while a kafka-python
    member of group ``live`` commits ``rounds`` times and an admin client commits group ``billing`` as often."""
    config = fast_config(group_initial_rebalance_delay_ms=300, log_snapshot_interval=4, log_checkpoint_interval=3)
    with BackgroundCoordinator(root, config, listen="127.0.0.1:0") as coordinator:
        consumer = KafkaConsumer(TOPIC, bootstrap_servers=coordinator.address, group_id="live",
                                 enable_auto_commit=False, session_timeout_ms=10000, heartbeat_interval_ms=500,
                                 metadata_max_age_ms=300, request_timeout_ms=15000)
        try:
            deadline = time.monotonic() + 60
            while len(consumer.assignment()) < PARTITIONS:
                assert time.monotonic() < deadline, "the member did not get every partition in time"
                consumer.poll(timeout_ms=100)
            with admin_session(root, config) as admin:
                for n in range(rounds):
                    consumer.commit({TopicPartition(TOPIC, p): OffsetAndMetadata(n + p, "", -1)
                                     for p in range(PARTITIONS)})
                    admin.commit_offsets("billing", {(TOPIC, 0): n, (TOPIC, 1): 2 * n})
                    time.sleep(0.3)  # materializer flushes in between: one state-table commit per round
        finally:
            consumer.close()


@pytest.mark.parametrize("table", TABLES)
def test_delta_spark_reads_every_table_as_delta_rs_does(written_reads: dict[str, TableReads], table: str) -> None:
    written_reads[table].check()


@pytest.mark.parametrize("table", TABLES)
def test_and_after_checkpoints_compaction_vacuum_and_new_appends(
        maintained_reads: dict[str, TableReads], maintained: StateRoot, table: str) -> None:
    """Time travel is the first test's; here the files that maintenance rewrote and the new appends on top."""
    maintained_reads[table].check()
    if table == "log":  # the coordinator appended through its own path after the maintenance commit
        history = DeltaTable(str(maintained.path / table)).history()
        assert history[0]["engineInfo"] == "groupcoord-delta-append", history[0]
        assert any(entry["operation"] == "OPTIMIZE" for entry in history), [e["operation"] for e in history]


@dataclass
class TableReads:
    """One table as delta-spark and delta-rs read it: the history (version to operation) of each, and the rows of
    each read (tagged ``_read``: ``latest``, ``versionAsOf``, ``timestampAsOf``) with delta-spark's schema and the
    schema delta-rs's rows take in Spark. ``error`` is what made delta-spark fail on the table, if it did."""

    table: str
    spark_history: dict[int, str] = field(default_factory=dict)
    rs_history: dict[int, str] = field(default_factory=dict)
    spark_schema: StructType | None = None
    rs_schema: StructType | None = None
    spark_rows: list[Row] = field(default_factory=list)
    rs_rows: list[Row] = field(default_factory=list)
    error: Exception | None = None

    def check(self) -> None:
        """Fail, naming the table, unless delta-spark read the same history, schema and rows as delta-rs."""
        if self.error is not None:
            raise AssertionError(f"{self.table}: delta-spark could not read it: {self.error}") from self.error
        assert self.spark_history == self.rs_history, f"{self.table}: DESCRIBE HISTORY is not delta-rs's history"
        assert self.spark_schema is not None and self.rs_schema is not None
        try:
            assert_schema_equality(self.spark_schema, self.rs_schema, ignore_nullable=True)
            assert_basic_rows_equality(sorted(self.spark_rows, key=repr), sorted(self.rs_rows, key=repr))
        except (SchemasNotEqualError, DataFramesNotEqualError) as error:
            raise AssertionError(f"{self.table}: delta-spark's rows (left) are not delta-rs's (right){error}") from None


def read_both(spark: SparkSession, root: Path, tables: Iterable[str], *, as_of: bool) -> dict[str, TableReads]:
    """Each table under ``root`` in both libraries: the history, the latest rows and (``as_of``) the rows at an
    earlier version and at its commit time.

    delta-spark's side is two collected jobs for all the tables (the histories, then every read with delta-rs's rows
    beside it, each row tagged with its table); a table that makes delta-spark fail gets its own error instead.
    """
    results = {table: TableReads(table) for table in tables}
    columns = {table: f"t{i}" for i, table in enumerate(results)}
    # Commit times as text in the session's zone (UTC), as timestampAsOf reads them, whatever the machine's zone.
    histories = _collect_each(results, _attempt(results, results, lambda table: spark.sql(
        f"DESCRIBE HISTORY delta.`{root / table}`").select(
        F.lit(table).alias("_table"), "version", F.date_format("timestamp", "yyyy-MM-dd HH:mm:ss.SSS").alias(
            "timestamp"), "operation")))
    frames = _attempt(results, histories, lambda table: _both_sides(
        spark, root / table, histories[table], as_of=as_of, result=results[table], column=columns[table]))
    for table, rows in _collect_each(results, frames).items():
        result = results[table]
        for row in rows:
            (result.spark_rows if row["_side"] == "delta-spark" else result.rs_rows).append(row[columns[table]])
    return results


def _both_sides(spark: SparkSession, path: Path, history: list[Row], *, as_of: bool, result: TableReads,
                column: str) -> DataFrame:
    """The table's rows of every read by delta-spark and by delta-rs (through Spark, as ``spark.createDataFrame``
    converts them), each row a struct in ``column`` beside its ``_table`` and ``_side``; records both histories and
    both schemas in ``result``."""
    latest = DeltaTable(str(path))
    result.spark_history = {row.version: row.operation for row in history}
    result.rs_history = {entry["version"]: entry["operation"] for entry in latest.history()}
    version = _earlier_readable_version(path, latest.version(), history)
    at = next(row.timestamp for row in history if row.version == version)
    reads = {"latest": (spark.read.format("delta").load(str(path)), latest.version())}
    if as_of:
        reads["versionAsOf"] = (spark.read.format("delta").option("versionAsOf", version).load(str(path)), version)
        reads["timestampAsOf"] = (spark.read.format("delta").option("timestampAsOf", at).load(str(path)), version)
    actual = functools.reduce(lambda left, right: left.unionByName(right, allowMissingColumns=True),
                              (frame.withColumn("_read", F.lit(name)) for name, (frame, _) in reads.items()))
    rows = {v: _rows(path, v) for v in {latest.version(), version}}
    table = pa.concat_tables([rows[v].append_column("_read", pa.array([name] * rows[v].num_rows, pa.string()))
                              for name, (_, v) in reads.items()], promote_options="default")
    expected = spark.createDataFrame(table.select(actual.columns)) if table.num_rows else spark.createDataFrame(
        [], actual.schema)
    result.spark_schema, result.rs_schema = actual.schema, expected.schema
    return functools.reduce(lambda left, right: left.unionByName(right), (
        frame.select(F.lit(result.table).alias("_table"), F.lit(side).alias("_side"),
                     F.struct(*(frame[name] for name in frame.columns)).alias(column))
        for side, frame in (("delta-spark", actual), ("delta-rs", expected))))


def _attempt(results: Mapping[str, TableReads], tables: Iterable[str], make: Callable[[str], T]) -> dict[str, T]:
    """``make(table)`` for each of ``tables`` that has not failed yet; a table whose ``make`` fails keeps the error
    (delta-spark's or delta-rs's), which its test reports."""
    made = {}
    for table in tables:
        if results[table].error is None:
            try:
                made[table] = make(table)
            except Exception as error:
                results[table].error = error
    return made


def _collect_each(results: Mapping[str, TableReads], frames: Mapping[str, DataFrame]) -> dict[str, list[Row]]:
    """Each table's collected rows (tagged ``_table``), in one job for all the tables; if that job fails, in one job
    per table, so that the error goes to the table that caused it."""
    if not frames:
        return {}
    try:
        collected = functools.reduce(lambda left, right: left.unionByName(right, allowMissingColumns=True),
                                     frames.values()).collect()
    except Exception:
        return _attempt(results, frames, lambda table: frames[table].collect())
    by_table: dict[str, list[Row]] = {table: [] for table in frames}
    for row in collected:
        by_table[row["_table"]].append(row)
    return by_table


def _rows(path: Path, version: int) -> pa.Table:
    """delta-rs's rows of ``version`` (read through the native local filesystem, as groupcoord reads)."""
    return table_dataset(DeltaTable(str(path), version=version)).to_table()


def _earlier_readable_version(path: Path, latest: int, history: list[Row]) -> int:
    """The newest version before ``latest`` whose files all still exist and whose commit time is its own
    (timestampAsOf picks the newest of equal times); the latest itself when there is none."""
    times = {row.version: row.timestamp for row in history}
    for version in range(latest - 1, -1, -1):
        if version not in times or times.get(version + 1) == times[version]:
            continue
        try:
            _rows(path, version)
        except (DeltaError, OSError):
            continue  # vacuumed: neither library can read it
        return version
    return latest
