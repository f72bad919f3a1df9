"""The ingestion pipeline on a real Spark standalone cluster under faults (issue 28): what each kill costs, and that it
costs no record and no acknowledged offset commit.

A cluster of a master and two workers (1 core each, their own JVMs: :class:`~groupcoord.cluster.StandaloneCluster`) runs
``jobs/streaming_ingest.py`` through ``bin/spark-submit --master spark://...`` in client mode, under ``groupcoord
cluster supervise`` (the README's cluster recipe, :meth:`ClusterPipeline.command`), with the state root, the sink and
Spark's checkpoints on an S3 server the driver and the executors share (versitygw on loopback,
:class:`~bench.s3_server.RestartableVersitygw`; its credentials in the environment of the cluster's daemons and of the
driver, its endpoint a ``spark.groupcoord.storage.endpoint`` setting: :func:`s3_locations`). The job consumes a demo
topic with ``--available-now`` and small batches, so that it runs for a while; part way, one fault:

- ``executor``: kill -9 an executor JVM that runs a task (the driver's REST API says which);
- ``driver``: kill -9 the driver's whole process group (spark-submit's JVM, the Python driver with the coordinator,
  its Python workers): the supervisor starts it again, its coordinator takes the lease over once the dead one's
  expired, the queries go on from their checkpoints, the group re-forms. With a driver pair (``drivers=2``:
  ``supervise --replicas 2``, ``spark.cores.max=1`` each) the killed driver is the lease holder, once both drivers'
  queries are members of the group: the other driver's coordinator takes the lease over, the dead queries' members
  expire, their partitions move to the other driver's queries, and the killed driver is started again and rejoins;
- ``worker``: kill -9 a worker JVM (its executors exit with it), then start it again :data:`WORKER_DOWN_S` later;
- ``storage``: the S3 server stopped, kept down :data:`STORAGE_DOWN_S` (every request refused) and started again on
  the same port and data (:class:`RestartableStorage`): the driver's and the executors' requests are retried with
  backoff (delta-rs's and obstore's ``object_store`` client, Hadoop's S3A, groupcoord's lease renewals), and the run
  goes on.

A watcher samples the sink's rows, the group's committed offsets and its state (the state root's materialized
tables) every :data:`SAMPLE_S`. Measured from the kill: **records flowing again** (the sink's first new rows), **all
flowing again** (every partition that had records left has moved on: the killed task's or member's too) and
**group stable again** (a Stable generation newer than the one at the kill, with every member; ``None`` when the
fault did not make the group rebalance). Checked at the end: the sink holds every record exactly once
(:func:`~groupcoord.ingest.check.check_exactly_once`), the committed offsets equal the sink's versions and the log
ends, and no partition's committed offset ever went back (an acknowledged commit lost by a take-over would).

    .venv/bin/python -m bench.cluster_faults [--engines structured,members] [--faults executor,driver,worker,storage]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from bench.results_io import RESULTS_DIR, Check, write_result
from bench.s3_server import RestartableVersitygw, S3Server
from groupcoord.cluster import ClusterSpec, StandaloneCluster
from groupcoord.cluster.processes import descendants, die_with_parent, kill_group, listening_pids
from groupcoord.cluster.supervisor import instance_pid_file
from groupcoord.devbroker.broker import free_port
from groupcoord.ingest.check import SinkCheck, check_exactly_once, embedded_rows
from groupcoord.ingest.demo_data import create_demo_topic
from groupcoord.log.lease import current_holder
from groupcoord.sink.table import SinkTable
from groupcoord.state.schema import GROUPS, OFFSETS
from groupcoord.state.views import read_view
from groupcoord.state_root import StateRoot
from groupcoord.topics import TopicLog

log = logging.getLogger("groupcoord.bench.cluster_faults")

REPO = Path(__file__).resolve().parents[1]
TOPIC = "events"
CHECKED_COLUMNS = ("topic", "partition", "offset", "value")
SAMPLE_S = 0.5
MATERIALIZED_WAIT_S = 10.0
"""How long the final check waits for the materialized offsets to show the last commits."""
WORKER_DOWN_S = 5.0
"""How long a killed worker stays down before it is started again."""
STORAGE_DOWN_S = 5.0
"""How long the restarted S3 server stays down (connections refused) before it listens again."""
FLOW_TARGET_S = 60.0
"""Issue 28: records flow again within 60 s of a driver kill on this machine; checked on ``all_flowing_again_s`` (the
members engine's executor tasks go on writing for a moment after their driver died, so the first new rows come at
once and say nothing about the recovery)."""
STALL_S = 360.0
"""The longest a run may go without a new row in the sink: a driver's restart and the group's re-forming included,
which took up to 3 minutes on this machine's 2 cores under other work (load average 12-20)."""
PAIR_FORMED_S = 300.0
"""How long a driver pair's drill waits for both drivers' queries to be members of the group before its kill."""
FAULTS = ("executor", "driver", "worker", "storage")
ENGINES = ("structured", "members")
_T = TypeVar("_T")


class RestartableStorage(Protocol):
    """The storage under the state root and the sink, when it is a server the drill can restart (the S3 server)."""

    def restart(self) -> None:
        """Stop the server and start it again on the same address and data."""


def s3_locations(server: S3Server, bucket: str) -> tuple[str, str, tuple[tuple[str, str], ...]]:
    """A drill's state root (``s3://``), sink (``s3a://``: Spark's name, which every path takes too) in ``bucket``
    of ``server``, and the spark-submit settings that reach it: the endpoint only (never a secret; the credentials
    come from the environment)."""
    return (f"s3://{bucket}/state", f"s3a://{bucket}/sink",
            (("spark.groupcoord.storage.endpoint", server.endpoint),))


@dataclass(frozen=True, kw_only=True)
class PipelineSpec:
    """One run of the ingestion job on the cluster: what it reads, where it writes, how it is paced."""

    engine: str = "structured"
    state_root: str
    sink: str
    group: str = "cluster-ingest"
    partitions: int = 4
    records: int = 4000
    members: int = 2
    batch: int = 100
    """``--max-records-per-batch``: each query's records per micro-batch, or each member's per partition."""
    session_timeout_ms: int = 10000
    executor_memory: str = "512m"
    drivers: int = 1
    """Supervised drivers of the job: 2 is a driver pair (``supervise --replicas 2``), each with ``cores_max``."""
    cores_max: int = 1
    """``spark.cores.max`` of each driver of a pair, so that both get executors on the cluster's cores."""
    conf: tuple[tuple[str, str], ...] = ()
    """More ``--conf`` settings for spark-submit (the storage's, e.g. ``spark.groupcoord.storage.endpoint`` for S3)."""

    @property
    def setup(self) -> str:
        """The row's label of the run: the engine, and ``pair`` for a driver pair."""
        return self.engine if self.drivers == 1 else f"{self.engine}, pair"

    @property
    def group_members(self) -> int:
        """The group's members once every driver's queries (or tasks) joined."""
        return self.members * self.drivers

    def job_arguments(self) -> list[str]:
        """``jobs/streaming_ingest.py``'s flags."""
        return ["--engine", self.engine, "--group", self.group, "--topics", TOPIC, "--sink", self.sink,
                "--members", str(self.members), "--max-records-per-batch", str(self.batch), "--available-now",
                "--no-progress-tty"]


def supervised_command(master_url: str, spec: PipelineSpec, pid_file: Path, ui_port: int) -> list[str]:
    """``groupcoord cluster supervise`` of ``bin/spark-submit`` running ``jobs/streaming_ingest.py`` on
    ``master_url``: the README's standalone recipe (``tests/cluster/test_recipe.py`` compares them) with the drill's
    values, its driver's UI on ``ui_port`` and this process's ``PYTHONPATH`` for the executors."""
    python_path = os.environ.get("PYTHONPATH")
    pair = spec.drivers > 1
    return [
        sys.executable, "-m", "groupcoord", "cluster", "supervise",
        *(["--replicas", str(spec.drivers)] if pair else []), "--pid-file", str(pid_file), "--",
        str(REPO / "bin" / "spark-submit"), "--master", master_url,
        "--conf", f"spark.executor.memory={spec.executor_memory}",
        *(["--conf", f"spark.cores.max={spec.cores_max}"] if pair else []),
        "--conf", f"spark.ui.port={ui_port}",
        *(["--conf", f"spark.executorEnv.PYTHONPATH={python_path}"] if python_path else []),
        "--conf", f"spark.groupcoord.state.root={spec.state_root}",
        "--conf", f"spark.groupcoord.streaming.session.timeout.ms={spec.session_timeout_ms}",
        *(["--conf", "spark.groupcoord.assignor.reserved.slots=0"] if spec.engine == "members" else []),
        *[arg for key, value in spec.conf for arg in ("--conf", f"{key}={value}")],
        str(REPO / "jobs" / "streaming_ingest.py"), *spec.job_arguments(),
    ]


@dataclass
class Sample:
    """What the watcher saw at one moment (``time.time()``)."""

    at: float
    rows: int
    committed: dict[tuple[str, int], int]
    group: tuple[str, int, int] | None
    """(state, generation, members) of the group's latest materialized generation."""
    versions: dict[int, int] = field(default_factory=dict)
    """Each partition's sink version (its next offset to write; 0 before its first commit)."""


class ClusterPipeline:
    """``jobs/streaming_ingest.py`` under ``groupcoord cluster supervise`` on a standalone cluster, and its watcher."""

    def __init__(self, cluster: StandaloneCluster, spec: PipelineSpec, work_dir: Path) -> None:
        self.cluster = cluster
        self.spec = spec
        self.work_dir = work_dir
        self.root = StateRoot.open(spec.state_root, create=True)
        self.pid_file = work_dir / "driver.pid"
        self.output_path = work_dir / "supervise.log"
        self.ui_port = free_port("127.0.0.1")
        self.samples: list[Sample] = []
        self.went_back: list[str] = []
        self.process: subprocess.Popen[bytes] | None = None
        self._stop = threading.Event()
        self._sampling = threading.Lock()
        self._watcher: threading.Thread | None = None

    def command(self) -> list[str]:
        """The supervised spark-submit line: the README's standalone recipe with this run's values."""
        return supervised_command(self.cluster.master_url, self.spec, self.pid_file, self.ui_port)

    def start(self) -> None:
        """Create the demo topic, start the supervised job and the watcher."""
        create_demo_topic(self.root, TOPIC, partitions=self.spec.partitions, records=self.spec.records)
        command = self.command()
        log.info("$ %s", shlex.join(command))
        with self.output_path.open("ab") as output:
            self.process = subprocess.Popen(command, cwd=REPO, stdin=subprocess.DEVNULL, stdout=output,
                                            stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"},
                                            preexec_fn=die_with_parent())
        self._watcher = threading.Thread(target=self._watch, name="cluster-pipeline-watcher", daemon=True)
        self._watcher.start()

    def stop(self) -> None:
        """Stop the watcher and, if it still runs, the supervisor (SIGTERM, then SIGKILL of it and its driver)."""
        self._stop.set()
        if self._watcher is not None:
            self._watcher.join(10)
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for driver in self.driver_pids():
            kill_group(driver)

    # --- what runs ------------------------------------------------------------------------------------------------

    def driver_pid(self, instance: int | None = None) -> int | None:
        """The running driver's pid (spark-submit's JVM, the leader of the driver's process group): of driver
        ``instance`` of a pair."""
        path = self.pid_file if instance is None else instance_pid_file(self.pid_file, instance)
        try:
            return int(path.read_text().strip())
        except (OSError, ValueError):
            return None

    def driver_pids(self) -> list[int]:
        """Every running driver's pid (one, or each of a pair's)."""
        instances: Iterable[int | None] = [None] if self.spec.drivers == 1 else range(self.spec.drivers)
        return [pid for i in instances if (pid := self.driver_pid(i)) is not None]

    def lease_holder_driver(self) -> int:
        """The pid of the driver (its process group) whose coordinator holds the lease now: the one listening on
        the lease's advertised port."""
        holder = current_holder(self.root)
        if holder is None or not holder.live:
            raise RuntimeError("no live coordinator lease")
        port = int(holder.address.rsplit(":", 1)[1])
        for pid in self.driver_pids():
            if listening_pids(port, [pid, *descendants(pid)]):
                return pid
        raise RuntimeError(f"no driver listens on the lease holder's address {holder.address}")

    def wait_for_pair(self, timeout_s: float = PAIR_FORMED_S) -> None:
        """Wait until the group is Stable with every driver's queries as members."""
        self._wait(lambda: bool(self.samples) and self.samples[-1].group is not None
                   and self.samples[-1].group[0] == "Stable" and self.samples[-1].group[2] == self.spec.group_members,
                   timeout_s, f"the group did not reach {self.spec.group_members} members")

    def output(self) -> str:
        """What the supervisor and the job printed so far."""
        return self.output_path.read_text(errors="replace") if self.output_path.exists() else ""

    def busy_executor(self, timeout_s: float = 5.0) -> int:
        """The pid of an executor JVM running a task now (by the driver's REST API); any executor after
        ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            busy = self._busy_executor_ids()
            for executor in self.cluster.executors():
                if executor.executor_id in busy:
                    return executor.pid
            time.sleep(0.2)
        executors = self.cluster.executors()
        if not executors:
            raise RuntimeError("the cluster runs no executor")
        log.warning("no executor seen running a task within %.0f s: killing executor %s", timeout_s,
                    executors[0].executor_id)
        return executors[0].pid

    def _busy_executor_ids(self) -> set[str]:
        base = f"http://127.0.0.1:{self.ui_port}/api/v1/applications"
        try:
            with urllib.request.urlopen(base, timeout=2) as response:
                apps = json.loads(response.read())
            with urllib.request.urlopen(f"{base}/{apps[0]['id']}/executors", timeout=2) as response:
                executors = json.loads(response.read())
        except (OSError, ValueError, IndexError, KeyError):
            return set()
        return {e["id"] for e in executors if e.get("activeTasks", 0) > 0 and e["id"] != "driver"}

    def wait_for_rows(self, rows: int, timeout_s: float = STALL_S * 2) -> None:
        """Wait until the sink holds at least ``rows`` rows (the job running all along)."""
        self._wait(lambda: bool(self.samples) and self.samples[-1].rows >= rows, timeout_s,
                   f"the sink did not reach {rows} rows")

    def wait_finished(self, timeout_s: float = 600.0) -> int:
        """Wait until the supervisor ends (the job finished: --available-now), failing on a stall; its exit code."""
        started = time.monotonic()
        moved, rows = time.monotonic(), -1
        assert self.process is not None
        while self.process.poll() is None:
            now_rows = self.samples[-1].rows if self.samples else 0
            if now_rows > rows:
                moved, rows = time.monotonic(), now_rows
            if time.monotonic() - moved > STALL_S or time.monotonic() - started > timeout_s:
                raise AssertionError(f"the job stalled at {rows} sink rows:\n{self.output()[-4000:]}")
            time.sleep(SAMPLE_S)
        self._stop.set()
        if self._watcher is not None:
            self._watcher.join(10)
        self._sample()
        return self.process.returncode

    def _wait(self, done: Callable[[], bool], timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while not done():
            if self.process is not None and self.process.poll() is not None:
                raise AssertionError(f"the job ended early ({what} yet):\n{self.output()[-4000:]}")
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} within {timeout_s:.0f} s:\n{self.output()[-4000:]}")
            time.sleep(SAMPLE_S / 2)

    # --- the watcher ----------------------------------------------------------------------------------------------

    def _watch(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            self._sample()

    def _sample(self) -> None:
        with self._sampling:  # the watcher and mark_kill: one sample at a time, appended in the order taken
            self._sample_locked()

    def _sample_locked(self) -> None:
        from kafka.structs import TopicPartition

        # A read that fails (a table not created yet, the storage down) keeps what the previous sample saw.
        last = self.samples[-1] if self.samples else Sample(0.0, 0, {}, None, {})
        sink = SinkTable(self.spec.sink, self.spec.group)
        rows = _or_empty(lambda: sink.row_count() if sink.table() is not None else 0, last.rows)
        versions = _or_empty(lambda: {tp.partition: version or 0 for tp, version in sink.versions(
            [TopicPartition(TOPIC, p) for p in range(self.spec.partitions)]).items()}, last.versions)
        committed = _or_empty(lambda: {(r["topic"], r["partition"]): r["offset"]
                                       for r in read_view(self.root, OFFSETS).to_pylist()
                                       if r["group_id"] == self.spec.group and r["offset"] is not None},
                              last.committed)
        no_group: list[dict[str, Any]] | None = None
        groups = _or_empty(lambda: [r for r in read_view(self.root, GROUPS).to_pylist()
                                    if r["group_id"] == self.spec.group], no_group)
        group = last.group if groups is None else (
            (groups[0]["state"], groups[0]["generation"], groups[0]["member_count"]) if groups else None)
        self.went_back += [f"{tp}: {last.committed[tp]} -> {offset}" for tp, offset in committed.items()
                           if tp in last.committed and offset < last.committed[tp]]
        self.samples.append(Sample(time.time(), rows, committed, group, versions))

    # --- measures and checks --------------------------------------------------------------------------------------

    def at(self, moment: float) -> Sample:
        """The last sample taken at or before ``moment``."""
        earlier = [s for s in self.samples if s.at <= moment]
        return earlier[-1] if earlier else Sample(moment, 0, {}, None, {})

    def mark_kill(self) -> Sample:
        """Sample now, just after a kill: the baseline the measures compare with. Nothing the kill stopped can commit
        after it, so what moves past this sample moved after the kill (a sample taken before it could miss commits
        made in between, and credit them to the recovery)."""
        self._sample()
        return self.samples[-1]

    def flowing_again_s(self, kill_at: float, baseline: Sample) -> float | None:
        """Seconds from ``kill_at`` to the first sample with more sink rows than ``baseline``."""
        later = [s for s in self.samples if s.at > baseline.at and s.rows > baseline.rows]
        return later[0].at - kill_at if later else None

    def all_flowing_again_s(self, kill_at: float, baseline: Sample) -> float | None:
        """Seconds from ``kill_at`` to the first sample where every partition not yet at its log end in ``baseline``
        has moved on: the killed member's or task's partitions flow again too."""
        ends = self.end_offsets()
        before = baseline.versions
        waiting = [p for p in range(self.spec.partitions) if before.get(p, 0) < ends.get(p, 0)]
        for sample in self.samples:
            if sample.at > baseline.at and all(sample.versions.get(p, 0) > before.get(p, 0) for p in waiting):
                return sample.at - kill_at
        return None

    def end_offsets(self) -> dict[int, int]:
        """The topic's log-end offset of each partition."""
        return dict(TopicLog(self.root, TOPIC).end_offsets())

    def stable_again_s(self, kill_at: float) -> float | None:
        """Seconds from ``kill_at`` to the first Stable generation newer than the one at the kill with every member;
        ``None`` when the group did not rebalance."""
        generation = (self.at(kill_at).group or ("", -1, 0))[1]
        for sample in self.samples:
            if sample.at > kill_at and sample.group is not None:
                state, newer, members = sample.group
                if newer > generation and state == "Stable" and members == self.spec.group_members:
                    return sample.at - kill_at
        return None

    def check(self) -> PipelineCheck:
        """Exactly once, committed offsets equal to the sink's versions and the log ends, none ever went back."""
        sink = SinkTable(self.spec.sink, self.spec.group)
        sink_check = check_exactly_once(sink.read_all(CHECKED_COLUMNS), embedded_rows(self.root, [TOPIC]))
        ends = {(TOPIC, p): end for p, end in self.end_offsets().items()}
        deadline = time.monotonic() + MATERIALIZED_WAIT_S
        while (not self.samples or self.samples[-1].committed != ends) and time.monotonic() < deadline:
            time.sleep(SAMPLE_S)  # the materialized offsets follow the record log by up to a flush interval
            self._sample()
        committed = self.samples[-1].committed if self.samples else {}
        from kafka.structs import TopicPartition

        versions = {(tp.topic, tp.partition): v for tp, v in
                    sink.versions([TopicPartition(t, p) for t, p in ends]).items()}
        return PipelineCheck(sink_check, committed == ends, versions == ends, list(self.went_back))


@dataclass(frozen=True)
class PipelineCheck:
    """The end-of-run checks of a fault drill."""

    sink: SinkCheck
    committed_at_log_end: bool
    sink_versions_at_log_end: bool
    commits_went_back: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (self.sink.ok and self.committed_at_log_end and self.sink_versions_at_log_end
                and not self.commits_went_back)

    def summary(self) -> str:
        return (f"{self.sink.summary()}; committed offsets at the log ends: {self.committed_at_log_end}; sink "
                f"versions at the log ends: {self.sink_versions_at_log_end}; commits gone back: "
                f"{self.commits_went_back or 'none'}")


@dataclass(frozen=True)
class FaultResult:
    """One drill: the fault, when it struck, what it cost, and the checks."""

    engine: str
    fault: str
    drivers: int
    killed: str
    kill_after_rows: int
    flowing_again_s: float | None
    all_flowing_again_s: float | None
    stable_again_s: float | None
    driver_runs: int
    exit_code: int
    check: PipelineCheck
    elapsed_s: float
    load_1m: float = 0.0

    def row(self) -> dict[str, Any]:
        """A results row."""
        return {"engine": self.engine, "fault": self.fault, "drivers": self.drivers, "killed": self.killed,
                "kill_after_rows": self.kill_after_rows,
                "flowing_again_s": _rounded(self.flowing_again_s),
                "all_flowing_again_s": _rounded(self.all_flowing_again_s),
                "stable_again_s": _rounded(self.stable_again_s),
                "driver_runs": self.driver_runs, "exit_code": self.exit_code, "exactly_once": self.check.sink.ok,
                "commits_kept": self.check.ok, "elapsed_s": round(self.elapsed_s, 1), "load_1m": round(self.load_1m, 1)}


def _or_empty(read: Callable[[], _T], empty: _T) -> _T:
    """``read()``, or ``empty`` while the table it reads does not exist yet (or is being created, or the storage is
    down)."""
    try:
        return read()
    except Exception:
        return empty


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def run_fault(cluster: StandaloneCluster, spec: PipelineSpec, fault: str, work_dir: Path, *,
              storage: RestartableStorage | None = None, kill_at_fraction: float = 0.3) -> FaultResult:
    """Run the pipeline of ``spec`` on ``cluster``, strike ``fault`` once ``kill_at_fraction`` of the records are in
    the sink, wait for the job to finish, and measure and check (see the module docstring)."""
    if fault not in FAULTS:
        raise ValueError(f"unknown fault {fault!r}; known: {', '.join(FAULTS)}")
    if fault == "storage" and storage is None:
        raise ValueError("the storage fault needs a RestartableStorage (the S3 server under the state root)")
    work_dir.mkdir(parents=True, exist_ok=True)
    pipeline = ClusterPipeline(cluster, spec, work_dir)
    started = time.monotonic()
    pipeline.start()
    try:
        kill_after = max(1, int(spec.records * kill_at_fraction))
        pipeline.wait_for_rows(kill_after)
        if spec.drivers > 1:
            pipeline.wait_for_pair()
        killed, kill_at = _strike(pipeline, fault, storage)
        baseline = pipeline.mark_kill()
        load = os.getloadavg()[0]
        log.info("%s/%s: killed %s at %d sink rows", spec.engine, fault, killed, baseline.rows)
        if fault == "worker":
            time.sleep(WORKER_DOWN_S)
            index = int(killed.split()[1])
            cluster.start_worker(index)
            cluster.wait_for_workers(len(cluster.workers))
        code = pipeline.wait_finished()
    finally:
        pipeline.stop()
    runs = len(re.findall(r"supervise(?: \[[^]]*\])?: started pid", pipeline.output()))
    result = FaultResult(spec.engine, fault, spec.drivers, killed, baseline.rows,
                         pipeline.flowing_again_s(kill_at, baseline), pipeline.all_flowing_again_s(kill_at, baseline),
                         pipeline.stable_again_s(kill_at), runs, code, pipeline.check(), time.monotonic() - started,
                         load)
    record_row(result)
    log.info("%s/%s: %s", spec.engine, fault, result.row())
    return result


def _strike(pipeline: ClusterPipeline, fault: str, storage: RestartableStorage | None) -> tuple[str, float]:
    """Strike ``fault``; returns what was killed and when (``time.time()``)."""
    cluster = pipeline.cluster
    if fault == "executor":
        pid = pipeline.busy_executor()
        worker = next(e.worker for e in cluster.executors() if e.pid == pid)
        kill_at = time.time()
        os.kill(pid, signal.SIGKILL)
        return f"executor pid {pid} on worker {worker}", kill_at
    if fault == "driver":
        pair = pipeline.spec.drivers > 1
        driver = pipeline.lease_holder_driver() if pair else pipeline.driver_pid()
        if driver is None:
            raise RuntimeError("no driver pid in the supervisor's pid file")
        kill_at = time.time()
        kill_group(driver)
        return f"{'the lease holder, ' if pair else ''}driver process group {driver}", kill_at
    if fault == "worker":
        busy = pipeline.busy_executor()
        index = next(e.worker for e in cluster.executors() if e.pid == busy)
        kill_at = time.time()
        cluster.kill_worker(index)
        return f"worker {index}", kill_at
    assert storage is not None
    kill_at = time.time()
    storage.restart()
    return "the storage server", kill_at


ROWS_ENV = "GROUPCOORD_CLUSTER_FAULT_ROWS"
"""When set, a file the cluster tests append their drills' rows to (JSON lines), for ``--from-rows``: one run of
``make test-cluster`` (and the cluster test of ``make test``) then gives the recorded times."""


def record_row(result: FaultResult) -> None:
    """Append ``result``'s row to the file named by :data:`ROWS_ENV`, if set."""
    target = os.environ.get(ROWS_ENV)
    if target:
        with open(target, "a", encoding="utf-8") as rows:
            rows.write(json.dumps(result.row()) + "\n")


def setup_label(row: dict[str, Any]) -> str:
    """A row's engine, with ``pair`` for a driver pair's row (rows recorded before pairs existed had one driver)."""
    return row["engine"] if row.get("drivers", 1) == 1 else f"{row['engine']}, pair"


def merge_rows(previous: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``previous`` rows with each one of the same engine, fault and drivers as a ``new`` row replaced by it (in
    place), then the ``new`` rows of other drills; every row gets ``drivers`` (1 when it has none)."""
    def key(row: dict[str, Any]) -> tuple[str, str, int]:
        return row["engine"], row["fault"], int(row.get("drivers", 1))

    def normal(row: dict[str, Any]) -> dict[str, Any]:  # the keys in FaultResult.row()'s order
        return {"engine": row["engine"], "fault": row["fault"], "drivers": key(row)[2], **row}

    latest = {key(row): normal(row) for row in new}
    merged = [latest.pop(key(row), normal(row)) for row in previous]
    return merged + list(latest.values())


def write_results(rows: list[dict[str, Any]], *, records: str, command: str | None = None) -> Path:
    """Write ``bench/results/cluster_faults.json`` from drill rows, with a correctness check per row and the driver
    kill's 60 s target (for one driver and for a driver pair)."""
    checks = [Check("cluster_faults", f"exactly_once_and_commits_kept[{setup_label(r)}, {r['fault']}]",
                    "correctness", r["commits_kept"], "==", True) for r in rows]
    checks += [Check("cluster_faults", f"driver_kill_all_flowing_again_s[{setup_label(r)}]", "speed",
                     r["all_flowing_again_s"] if r["all_flowing_again_s"] is not None else float("inf"), "<=",
                     FLOW_TARGET_S)
               for r in rows if r["fault"] == "driver"]
    return write_result(
        "cluster_faults",
        title="The ingestion pipeline on a Spark standalone cluster under faults: recovery times",
        rows=rows, checks=checks, command=command,
        summary={"cluster": "1 master + 2 workers x 1 core (own JVMs, 127.0.0.1), executors 512 MB",
                 "records": records, "partitions": 4, "batch": "100 (structured), 10 (members)",
                 "session_timeout_ms": 10000,
                 "worker_down_s": WORKER_DOWN_S, "storage_down_s": STORAGE_DOWN_S,
                 "storage": "S3 (versitygw 1.8.0 on 127.0.0.1, posix backend)"},
        notes="jobs/streaming_ingest.py --available-now under `groupcoord cluster supervise`, bin/spark-submit "
              "--master spark://127.0.0.1:PORT (client mode), the state root, the sink and Spark's checkpoints on "
              "an S3 server (versitygw on loopback; its credentials in the daemons' and the driver's environment). "
              "Kill at 30% of the records in the sink; storage: the S3 server stopped, down "
              f"{STORAGE_DOWN_S:.0f} s, started again on the same port and data. flowing_again_s: kill to the sink's "
              "next new rows; all_flowing_again_s: kill to every unfinished partition's next rows; "
              "stable_again_s: kill to a Stable generation newer than the one at the kill with every member "
              "(None: no rebalance). "
              "Sampled every 0.5 s from the state root's materialized tables. exactly_once: every record once; "
              "commits_kept: also committed offsets = sink versions = log ends, and no committed offset ever went "
              "back. load_1m: the machine's 1-minute load average at the kill (2 cores, shared with other work).")


def main(full: bool = False, argv: Sequence[str] | None = None) -> None:
    """Run the fault matrix on a fresh cluster (or take the rows the cluster tests recorded, ``--from-rows``) and
    write ``bench/results/cluster_faults.json``."""
    parser = argparse.ArgumentParser(prog="bench.cluster_faults")
    parser.add_argument("--engines", default=",".join(ENGINES), help="comma-separated engines")
    parser.add_argument("--faults", default=",".join(FAULTS), help="comma-separated faults")
    parser.add_argument("--records", type=int, default=4000)
    parser.add_argument("--from-rows", metavar="FILE",
                        help=f"write the rows the cluster tests recorded ({ROWS_ENV}=FILE) instead of running")
    parser.add_argument("--merge", action="store_true",
                        help="with --from-rows: replace only the recorded results' rows of the same drills (engine, "
                             "fault, drivers) and keep the others")
    args = parser.parse_args([] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.from_rows:
        rows = [json.loads(line) for line in Path(args.from_rows).read_text().splitlines() if line.strip()]
        command = (f"{ROWS_ENV}={args.from_rows} pytest tests/cluster/test_standalone.py tests/cluster/test_faults.py; "
                   f"python -m bench.cluster_faults --from-rows {args.from_rows}")
        if args.merge:
            drills = "; ".join(f"{r['fault']} ({setup_label(r)})" for r in rows)
            command = (f"{ROWS_ENV}={args.from_rows} pytest tests/cluster/test_faults.py (drills: {drills}); "
                       f"python -m bench.cluster_faults --from-rows {args.from_rows} --merge")
            previous = json.loads((RESULTS_DIR / "cluster_faults.json").read_text(encoding="utf-8"))
            rows = merge_rows(previous["rows"], rows)
            command += f" (the other rows from {previous['date']}: {previous.get('command')})"
        print(write_results(rows, records="1,200 (make test's executor kill), 6,000 (a driver pair's kill), 4,000 "
                                          "(the others)", command=command))
        return
    results: list[FaultResult] = []
    with tempfile.TemporaryDirectory(prefix="cluster-faults-") as tmp, \
            RestartableVersitygw(Path(tmp) / "s3", down_s=STORAGE_DOWN_S) as storage:
        work = Path(tmp)
        os.environ.update(storage.server.env)  # the watcher's reads, and the driver's environment
        os.environ.pop("AWS_S3_ALLOW_UNSAFE_RENAME", None)
        with StandaloneCluster.start(work / "cluster", ClusterSpec(workers=2, cores=1),
                                     env=storage.server.env) as cluster:
            for engine in args.engines.split(","):
                for fault in args.faults.split(","):
                    run = work / f"{engine}-{fault}"
                    bucket = storage.server.create_bucket(f"{engine}-{fault}")
                    state_root, sink, conf = s3_locations(storage.server, bucket)
                    spec = PipelineSpec(engine=engine, state_root=state_root, sink=sink, conf=conf,
                                        records=args.records, members=2, batch=10 if engine == "members" else 100)
                    print(f"== {engine} / {fault}", flush=True)
                    results.append(run_fault(cluster, spec, fault, run, storage=storage))
                    if engine == "structured" and fault == "driver":
                        pair = PipelineSpec(engine=engine, state_root=f"{state_root}-pair", sink=f"{sink}-pair",
                                            conf=conf, records=args.records, members=2, batch=100, drivers=2)
                        print(f"== {engine} / {fault} (driver pair)", flush=True)
                        results.append(run_fault(cluster, pair, fault, work / "structured-driver-pair",
                                                 storage=storage))
    write_results([r.row() for r in results], records=f"{args.records:,}")
    for result in results:
        print(f"{result.engine}/{result.fault}: {result.row()} {result.check.summary()}", flush=True)


if __name__ == "__main__":
    main(argv=sys.argv[1:])
