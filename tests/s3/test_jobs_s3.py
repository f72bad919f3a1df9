"""The ingestion job and the checkpoint job on S3, as a user runs them: ``bin/spark-submit`` with ``--state-root
s3://...`` and ``--sink s3a://...`` (Spark's name for the same bucket), the credentials in the environment only.

``bin/spark-submit`` sees the S3 URIs among its arguments and adds the ``s3`` jars and each bucket's S3A settings; the
endpoint reaches every process as ``spark.groupcoord.storage.endpoint``. ``jobs/streaming_ingest.py`` runs with each
engine (Structured Streaming queries, their checkpoints under the sink on S3; executor tasks as members), with
``--available-now``, then the checkpoint job snapshots the group's offsets into ``offset_checkpoints`` on S3.

Each run starts a JVM of its own with the 690 MB AWS SDK bundle on its classpath (about a minute each on 2 cores):
marked ``faults``, so ``make test-faults`` runs them and ``make test`` leaves them to ``test_spark_s3.py``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench.s3_server import REGION, SECRET_KEY, S3Server
from groupcoord.admin.checkpoint import CHECKPOINT_TABLE, read_window
from groupcoord.ingest.check import check_exactly_once, embedded_rows
from groupcoord.ingest.demo_data import create_demo_topic
from groupcoord.ingest.demo_pipeline import REPO, spark_submit, spark_submit_env
from groupcoord.sink.table import SinkTable
from groupcoord.state.schema import OFFSETS
from groupcoord.state.views import read_view
from groupcoord.state_root import StateRoot

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.integration, pytest.mark.faults]

RECORDS = 1200
PARTITIONS = 4
JOB_TIMEOUT_S = 600


def _submit(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(spark_submit()), "--master", "local[4,4]", "--conf", "spark.ui.enabled=false", *args],
                          env=env, cwd=REPO, capture_output=True, text=True, timeout=JOB_TIMEOUT_S, check=False)


@pytest.mark.parametrize("engine", ["structured", "members"])
def test_the_jobs_run_under_spark_submit_on_s3(engine: str, s3_server: S3Server, s3_bucket: str,
                                               s3_env: dict[str, str], tmp_path: Path) -> None:
    """Every record once in the sink on S3, the offsets committed, the checkpoint job's table on S3; the secret
    appears neither in the jobs' output nor in Spark's event log (its conf dump, what the UI shows)."""
    storage = {"storage.endpoint": s3_server.endpoint, "storage.region": REGION}
    root = StateRoot.open(f"s3://{s3_bucket}/state", create=True, storage=storage)
    create_demo_topic(root, "events", partitions=PARTITIONS, records=RECORDS)
    env = {**spark_submit_env(), "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
           **{name: value for name, value in s3_env.items() if name != "AWS_ENDPOINT_URL"}}
    conf = [arg for key, value in storage.items() for arg in ("--conf", f"spark.groupcoord.{key}={value}")]
    sink = f"s3a://{s3_bucket}/lake/events"
    events = tmp_path / "events"
    events.mkdir()
    conf += ["--conf", "spark.eventLog.enabled=true", "--conf", f"spark.eventLog.dir={events.as_uri()}",
             "--conf", "spark.eventLog.compress=false"]  # plain text, one folder of files per application
    ingest = _submit([*conf, "--conf", "spark.groupcoord.group.initial.rebalance.delay.ms=0",
                      str(REPO / "jobs" / "streaming_ingest.py"), "--state-root", root.location.uri, "--engine", engine,
                      "--group", "s3-job", "--topics", "events", "--sink", sink, "--members", "2",
                      "--max-records-per-batch", "400", "--available-now", "--no-progress-tty",
                      "--assignors", "cooperative-sticky"], env)
    assert ingest.returncode == 0, (ingest.stdout + ingest.stderr)[-4000:]
    assert SECRET_KEY not in ingest.stdout + ingest.stderr
    table = SinkTable(sink, "s3-job", storage)
    result = check_exactly_once(table.read_all(), embedded_rows(root, ["events"]))
    assert result.ok, result.summary()
    committed = {(r["topic"], r["partition"]): r["offset"] for r in read_view(root, OFFSETS).to_pylist()}
    assert committed == {("events", p): RECORDS // PARTITIONS for p in range(PARTITIONS)}

    checkpoint = _submit([*conf, str(REPO / "jobs" / "offset_checkpoint.py"), "--state-root",
                          root.location.uri.replace("s3://", "s3a://")], env)
    assert checkpoint.returncode == 0, (checkpoint.stdout + checkpoint.stderr)[-4000:]
    window = read_window(root.location / CHECKPOINT_TABLE, 10)
    assert window.num_rows == PARTITIONS and set(window.column("lag").to_pylist()) == {0}
    applications = sorted(events.iterdir())
    logs = [log.read_text() for log in sorted(events.rglob("*")) if log.is_file()]
    assert len(applications) == 2 and any("fs.s3a.bucket" in log for log in logs)  # the conf dump is there
    assert not any(SECRET_KEY in log for log in logs)
