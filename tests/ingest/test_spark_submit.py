"""Smoke tests of ``bin/spark-submit``, the documented way to run the jobs, in local mode.

``jobs/streaming_ingest.py`` runs with its default engine (two Structured Streaming queries) and without
``--available-now``; once the sink holds every record, SIGTERM goes to the job's Python driver (found as a descendant
of the spark-submit process this test started): the queries stop and leave the group, the job exits 0. A tiny job
started from a clean environment (no venv on the ``PATH``, no ``SPARK_HOME``) shows that the wrapper alone gives Spark
this venv's Python, Delta, the Kafka source, UTC and quiet logs.

The SIGTERM run is a fault scenario (how a cluster manager stops a driver) and costs about 95 s: it is marked
``faults``, so ``make test-faults`` runs it (CI runs that after ``make test``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from deltalake import DeltaTable

from groupcoord.config.jars import DELTA_EXTENSION
from groupcoord.ingest.check import check_exactly_once, embedded_rows
from groupcoord.ingest.demo_data import create_demo_topic
from groupcoord.ingest.demo_pipeline import REPO, spark_submit
from groupcoord.sink.table import SinkTable
from groupcoord.spark.submit import LOG4J2_CONFIG, VENV_ENV
from groupcoord.state.schema import OFFSETS
from groupcoord.state.views import read_view
from groupcoord.state_root import StateRoot

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.integration]

RECORDS = 2000
STALL_S = 120.0
"""The longest the job may go without a new row in the sink (its start, Spark's and the first query's, included)."""
GIVE_UP_S = 420.0
"""The longest the job may take to ingest every record."""


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def python_driver(pid: int) -> int | None:
    """The Python driver of the spark-submit process ``pid`` (the descendant running streaming_ingest.py)."""
    for child in descendants(pid):
        try:
            argv = (Path("/proc") / str(child) / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        program = Path(argv[0].decode(errors="replace")).name
        if "python" in program and any(a.endswith(b"streaming_ingest.py") for a in argv):
            return child
    return None


@pytest.mark.faults
def test_spark_submit_runs_the_job_and_sigterm_commits_and_leaves(tmp_path: Path) -> None:
    root = StateRoot.open(tmp_path / "state", create=True)
    create_demo_topic(root, "events", partitions=4, records=RECORDS)
    sink = tmp_path / "sink"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    job = subprocess.Popen(
        [str(spark_submit()), "--master", "local[3,2]", "--conf", "spark.ui.enabled=false",
         "--conf", f"spark.groupcoord.state.root={root.path}",
         "--conf", "spark.groupcoord.group.initial.rebalance.delay.ms=0",
         str(REPO / "jobs" / "streaming_ingest.py"), "--group", "smoke", "--topics", "events", "--sink", str(sink),
         "--members", "2", "--max-records-per-batch", "300", "--no-progress-tty", "--assignors", "cooperative-sticky"],
        env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        _wait_until_ingested(job, sink)
        driver = python_driver(job.pid)
        assert driver is not None, "no Python driver process found"
        os.kill(driver, signal.SIGTERM)
        output, _ = job.communicate(timeout=90)
    finally:
        if job.poll() is None:
            job.kill()
            job.wait(10)
    assert job.returncode == 0, output[-3000:]
    assert "received SIGTERM" in output
    result = check_exactly_once(SinkTable(sink, "smoke").read_all(), embedded_rows(root, ["events"]))
    assert result.ok, result.summary()
    committed = {(r["topic"], r["partition"]): r["offset"] for r in read_view(root, OFFSETS).to_pylist()}
    assert committed == {("events", p): RECORDS // 4 for p in range(4)}


def _wait_until_ingested(job: subprocess.Popen[str], sink: Path) -> None:
    """Wait until the sink holds every record, while the job makes progress: fail if it ends, if it writes nothing
    for :data:`STALL_S`, or after :data:`GIVE_UP_S` in all (load slows a job; a stuck job stops moving)."""
    started = moved = time.monotonic()
    rows = 0
    while rows < RECORDS:
        assert job.poll() is None, f"the job ended early:\n{job.stdout.read() if job.stdout else ''}"
        now = time.monotonic()
        assert now - moved < STALL_S, f"the job wrote nothing for {STALL_S:.0f} s (sink rows: {rows} of {RECORDS})"
        assert now - started < GIVE_UP_S, f"the job did not ingest everything in {GIVE_UP_S:.0f} s ({rows} rows)"
        time.sleep(0.5)
        now_rows = SinkTable(sink, "smoke").row_count() if sink.exists() else 0
        if now_rows > rows:
            rows, moved = now_rows, time.monotonic()


TINY_JOB = """
import json, sys
from pyspark.sql import SparkSession

spark = SparkSession.builder.appName("tiny").getOrCreate()
table = sys.argv[1]
spark.range(3).write.format("delta").save(table)
stream = spark.readStream.format("kafka").option("kafka.bootstrap.servers", "127.0.0.1:9").option("subscribe", "t")
system = spark.sparkContext._jvm.java.lang.System
print("TINY " + json.dumps({
    "extensions": spark.conf.get("spark.sql.extensions"),
    "snapshot_partitions": spark.conf.get("spark.databricks.delta.snapshotPartitions"),
    "kafka_columns": stream.load().columns,
    "timezone": system.getProperty("user.timezone"),
    "log4j2": system.getProperty("log4j2.configurationFile"),
    "python": sys.executable,
}))
spark.stop()
"""


def test_the_wrapper_runs_a_job_from_a_clean_environment(tmp_path: Path) -> None:
    job = tmp_path / "tiny_job.py"
    job.write_text(TINY_JOB)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    if Path(sys.prefix) != REPO / ".venv":  # tests run from another venv: the wrapper's default would miss it
        env[VENV_ENV] = sys.prefix
    if "JAVA_HOME" in os.environ:  # Java is a prerequisite of its own, not part of the venv
        env["JAVA_HOME"] = os.environ["JAVA_HOME"]
    run = subprocess.run([str(spark_submit()), "--master", "local[1]", "--conf", "spark.ui.enabled=false", str(job),
                          str(tmp_path / "table")], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=180)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-3000:]
    (line,) = [line for line in run.stdout.splitlines() if line.startswith("TINY ")]
    facts = json.loads(line.removeprefix("TINY "))
    # Delta's jars on the driver's classpath (it wrote a table, read back here by delta-rs), its extension on, sized
    # for a local master
    assert DeltaTable(str(tmp_path / "table")).to_pyarrow_table().num_rows == 3
    assert facts["extensions"] == DELTA_EXTENSION
    assert facts["snapshot_partitions"] == "1"
    assert facts["kafka_columns"][:2] == ["key", "value"]  # the Kafka source's jar
    assert facts["timezone"] == "UTC"
    assert facts["log4j2"] == LOG4J2_CONFIG.as_uri()
    assert Path(facts["python"]).parent == Path(sys.prefix) / "bin"
    assert [line for line in output.splitlines() if " INFO " in line] == []  # Spark at WARN
