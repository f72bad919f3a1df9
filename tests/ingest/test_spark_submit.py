"""One smoke test of the real entry point: ``spark-submit jobs/streaming_ingest.py`` in local mode.

The job runs without ``--available-now``; once the sink holds every record, SIGTERM goes to the job's Python driver
(found as a descendant of the spark-submit process this test started): members commit and leave, the job exits 0.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from groupcoord.ingest.check import check_exactly_once, embedded_rows
from groupcoord.ingest.demo_data import create_demo_topic
from groupcoord.ingest.demo_pipeline import REPO, spark_submit
from groupcoord.ingest.sink import DeltaSink
from groupcoord.state.schema import OFFSETS
from groupcoord.state.views import read_view
from groupcoord.state_root import StateRoot

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.integration]

RECORDS = 2000


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
        deadline = time.monotonic() + 150
        while not (sink.exists() and DeltaSink(sink, "smoke").row_count() >= RECORDS):
            assert job.poll() is None, f"the job ended early:\n{job.stdout.read() if job.stdout else ''}"
            assert time.monotonic() < deadline, "the job did not ingest everything in time"
            time.sleep(0.5)
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
    result = check_exactly_once(DeltaSink(sink, "smoke").read_all(), embedded_rows(root, ["events"]))
    assert result.ok, result.summary()
    committed = {(r["topic"], r["partition"]): r["offset"] for r in read_view(root, OFFSETS).to_pylist()}
    assert committed == {("events", p): RECORDS // 4 for p in range(4)}
