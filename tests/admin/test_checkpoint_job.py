"""The offset checkpoint job on real Delta tables and the session's Spark: the snapshot (idempotent per run id),
lag as DataFrame work, partition weights, Burrow statuses across runs, the Prometheus textfile and the PNG."""

from __future__ import annotations

import contextlib
import datetime as dt
import io
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest
from chispa import assert_df_equality
from deltalake import DeltaTable

from groupcoord.admin.checkpoint import CHECKPOINT_SCHEMA, WEIGHTS_SCHEMA, CheckpointConfig, run_checkpoint
from groupcoord.admin.checkpoint_job import main
from groupcoord.admin.lag import lag_frame
from groupcoord.assignment.weights import read_partition_weights
from groupcoord.state_root import StateRoot
from groupcoord.topics import ProducerRecord, TopicCatalog, TopicLog
from tests.cli.conftest import commit

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.integration]

TOPIC = "orders"


def _billing_root(path: Path) -> StateRoot:
    """Topic ``orders`` with 10, 20 and 30 records in partitions 0-2; group ``billing`` committed 4, 20, 25."""
    state = StateRoot.open(path, create=True)
    TopicCatalog(state).create(TOPIC, 3)
    TopicLog(state, TOPIC).produce(ProducerRecord(b"v", partition=p) for p in range(3) for _ in range(10 * (p + 1)))
    commit(state, "billing", {(TOPIC, 0): 4, (TOPIC, 1): 20, (TOPIC, 2): 25})
    return state


@pytest.fixture
def root(tmp_path: Path) -> StateRoot:
    """A fresh :func:`_billing_root`."""
    return _billing_root(tmp_path / "state")


@dataclass(frozen=True)
class JobRuns:
    """A :func:`_billing_root` after the job's runs (see :func:`job_runs`), what the first run printed, and the
    Prometheus textfile and PNG the job wrote."""

    root: StateRoot
    report: str
    prom: Path
    png: Path


@pytest.fixture(scope="module")
def job_runs(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> JobRuns:
    """The runs two tests below read (neither writes): the job's command line as run id ``run-1`` twice (with
    ``--prometheus`` and ``--plot``), then :func:`run_checkpoint` as ``run-2``. Made once for the module: every run
    is several delta-spark commits."""
    tmp = tmp_path_factory.mktemp("checkpoint-job")
    root = _billing_root(tmp / "state")
    prom, png = tmp / "metrics" / "groupcoord.prom", tmp / "lag.png"
    argv = ["--state-root", str(root.path), "--run-id", "run-1", "--prometheus", str(prom), "--plot", str(png)]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(argv, spark=spark) == 0
        assert main(argv, spark=spark) == 0
    run_checkpoint(spark, root, run_id="run-2")
    return JobRuns(root, printed.getvalue().split("Checkpoint run run-1 at ")[1], prom, png)


def _rows(path: Path) -> list[dict[str, object]]:
    table = DeltaTable(str(path)).to_pyarrow_table()
    return sorted(table.to_pylist(), key=lambda r: (str(r.get("run_id")), str(r["group_id"]), r["partition"]))


def test_lag_is_dataframe_work_with_null_lag_for_unknown_topics(spark: object) -> None:
    from pyspark.sql import SparkSession

    assert isinstance(spark, SparkSession)
    when = dt.datetime(2024, 5, 1, tzinfo=dt.UTC)
    offsets = pa.table({"group_id": ["g", "g", "g"], "topic": ["t", "t", "gone"], "partition": pa.array([0, 1, 0],
                        pa.int32()), "offset": pa.array([3, 12, 5], pa.int64()),
                        "commit_time": pa.array([when] * 3, pa.timestamp("us", tz="UTC"))})
    ends = pa.table({"topic": ["t", "t"], "partition": pa.array([0, 1], pa.int32()),
                     "log_end_offset": pa.array([10, 10], pa.int64())})
    actual = lag_frame(spark, offsets, ends, run_id="r", run_time=when).select(
        "group_id", "topic", "partition", "offset", "log_end_offset", "lag")
    expected = spark.createDataFrame(
        [("g", "gone", 0, 5, None, None), ("g", "t", 0, 3, 10, 7), ("g", "t", 1, 12, 10, 0)],
        "group_id string, topic string, partition int, offset long, log_end_offset long, lag long")
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True)


def test_a_run_writes_snapshot_weights_textfile_and_plot_and_rerunning_its_id_is_idempotent(job_runs: JobRuns) -> None:
    root, prom, png = job_runs.root, job_runs.prom, job_runs.png
    assert ["billing", "OK", "OK", "0", "11"] in [line.split() for line in job_runs.report.splitlines()]

    rows = _rows(root.path / "offset_checkpoints")
    assert [(r["run_id"], r["partition"], r["offset"], r["log_end_offset"], r["lag"]) for r in rows] == [
        ("run-1", 0, 4, 10, 6), ("run-1", 1, 20, 20, 0), ("run-1", 2, 25, 30, 5),  # once, though run twice
        ("run-2", 0, 4, 10, 6), ("run-2", 1, 20, 20, 0), ("run-2", 2, 25, 30, 5)]
    weights = _rows(root.partition_weights_path.local_path)
    assert [(r["group_id"], r["topic"], r["partition"], r["weight"]) for r in weights] == [
        ("billing", TOPIC, 0, 7.0), ("billing", TOPIC, 1, 1.0), ("billing", TOPIC, 2, 6.0)]

    text = prom.read_text()
    for line in ('kafka_consumergroup_current_offset{consumergroup="billing",partition="0",topic="orders"} 4.0',
                 'kafka_consumergroup_lag{consumergroup="billing",partition="2",topic="orders"} 5.0',
                 'kafka_consumergroup_lag_sum{consumergroup="billing",topic="orders"} 11.0',
                 'kafka_consumergroup_members{consumergroup="billing"} 0.0',
                 'groupcoord_consumergroup_status{consumergroup="billing"} 0.0',
                 "# TYPE kafka_consumergroup_lag gauge"):
        assert line in text.splitlines()
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_runs_that_see_no_new_commits_while_the_log_grows_make_the_group_err_with_stop(
        spark: object, root: StateRoot, tmp_path: Path) -> None:
    config = CheckpointConfig(window=3, table=str(tmp_path / "checkpoints"))
    start = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=1)
    log = TopicLog(root, TOPIC)
    results = []
    for run in range(3):
        log.produce(ProducerRecord(b"more", partition=p) for p in range(3))
        results.append(run_checkpoint(spark, root, config=config, run_id=f"r{run}",  # type: ignore[arg-type]
                                      now=start + dt.timedelta(minutes=run)))
    assert results[0].groups[0].status.status == "OK"  # a single run cannot judge
    (billing,) = results[-1].groups
    assert (billing.group_id, billing.status.status, billing.status.worst_partition) == ("billing", "ERR", "STOP")
    assert [p.status for p in billing.partitions] == ["STOP", "STOP", "STOP"]
    assert [p.lag for p in billing.partitions] == [9, 3, 8]
    assert len({r["run_id"] for r in _rows(tmp_path / "checkpoints")}) == 3


def test_errors_are_one_line(spark: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--state-root", str(tmp_path / "missing")], spark=spark) == 1  # type: ignore[arg-type]
    assert capsys.readouterr().err.startswith("offset_checkpoint: error: state root ")
    root = StateRoot.open(tmp_path / "ok", create=True)
    assert main(["--state-root", str(root.path), "--run-id", "bad id!"], spark=spark) == 1  # type: ignore[arg-type]
    assert "run id 'bad id!' must be" in capsys.readouterr().err


def test_the_job_writes_its_tables_with_delta_spark_on_protocol_1_2_readable_by_delta_rs(
        spark: SparkSession, job_runs: JobRuns) -> None:
    root = job_runs.root
    for path, schema in ((root.path / "offset_checkpoints", CHECKPOINT_SCHEMA),
                         (root.partition_weights_path, WEIGHTS_SCHEMA)):
        table = DeltaTable(str(path))
        assert (table.protocol().min_reader_version, table.protocol().min_writer_version) == (1, 2)
        assert not table.protocol().reader_features and not table.protocol().writer_features
        assert table.schema().to_arrow() == schema  # NOT NULL columns kept; delta-rs reads the same types
        writers = {entry.get("engineInfo", "") for entry in table.history() if entry["operation"] == "WRITE"}
        assert writers and all("Delta-Lake/" in w for w in writers), writers  # delta-spark, not delta-rs
        from_spark = spark.read.format("delta").load(str(path))
        assert_df_equality(from_spark, spark.createDataFrame(table.to_pyarrow_table().select(schema.names)),
                           ignore_row_order=True)
    assert {str(r["run_id"]) for r in _rows(root.path / "offset_checkpoints")} == {"run-1", "run-2"}
    # The coordinator reads the weights with delta-rs: the newest run's 1 + lag per partition.
    assert read_partition_weights(root.partition_weights_path, {"billing"}) == {
        ("billing", TOPIC, 0): 7.0, ("billing", TOPIC, 1): 1.0, ("billing", TOPIC, 2): 6.0}
