"""A real Spark standalone cluster on one machine: a master and N workers, each its own JVM, from pip's pyspark.

pip's pyspark ships ``bin/spark-class`` and the ``Master`` and ``Worker`` classes, but not the ``start-*.sh``
scripts. :class:`StandaloneCluster` starts them through ``spark-class`` (Spark's own launcher: its JVM options, its
classpath), on free ports of one address (``127.0.0.1`` by default), waits until the master answers and every worker
is registered with it, and stops them cleanly (workers first: each kills its executors as it stops). Each worker
launches the executors of the applications submitted to ``master_url`` as JVMs of their own, its children.

- **Logs** go under the work dir: ``logs/master.log``, ``logs/worker-<i>.log`` (appended to when a worker is started
  again); the executors' own stdout and stderr are Spark's ``work/worker-<i>/<app-id>/<executor-id>/``.
- **Environment**: the daemons get this process's environment (and ``env``), so each executor and its Python workers
  inherit it: a ``PYTHONPATH`` set here reaches the executors' Python (Spark prepends its own entries to it).
- **Dies with its parent**: on Linux every daemon gets SIGKILL when the thread that started it ends, and a killed
  worker's executors exit on their own (they watch their worker), so a killed test session leaves nothing behind.
- **Small**: the daemons get ``SPARK_DAEMON_MEMORY`` (256 MB), the serial collector and no C2 compiler; the
  executors are sized by the application (``spark.executor.memory``, at most the worker's ``memory``).

``groupcoord cluster start`` runs one from the command line; ``tests/cluster`` uses it as a fixture.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from groupcoord.cluster.processes import alive, command_line, descendants, die_with_parent
from groupcoord.devbroker.broker import free_port

log = logging.getLogger("groupcoord.cluster")

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
DAEMON_JAVA_OPTIONS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Dspark.port.maxRetries=0"
"""The daemons' JVM options: one GC thread and no C2 compiler (they do little; the cores belong to the executors), and
no silent move to the next port when a port picked free was taken meanwhile (the start is retried on new ports)."""
READY_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 20.0
_START_ATTEMPTS = 3
_POLL_S = 0.2


class ClusterError(RuntimeError):
    """The cluster could not start, or a daemon died; the message names the log to read."""


@dataclass(frozen=True, kw_only=True)
class ClusterSpec:
    """The cluster's shape: ``workers`` workers of ``cores`` task slots and ``memory`` for executors each."""

    workers: int = 2
    cores: int = 1
    memory: str = "1g"
    host: str = "127.0.0.1"
    daemon_memory: str = "256m"

    def __post_init__(self) -> None:
        if self.workers < 1 or self.cores < 1:
            raise ValueError(f"a cluster needs at least one worker of one core (got {self.workers} x {self.cores})")


@dataclass(frozen=True)
class Executor:
    """An executor JVM running on one of the cluster's workers."""

    pid: int
    worker: int
    executor_id: str
    app_id: str


@dataclass
class _Daemon:
    name: str
    process: subprocess.Popen[bytes]
    log_path: Path
    log_start: int = 0


@dataclass
class StandaloneCluster:
    """A running master and its workers (see the module docstring); start it with :meth:`start`."""

    spec: ClusterSpec
    work_dir: Path
    master_port: int
    webui_port: int
    env: dict[str, str]
    master: _Daemon | None = None
    workers: list[_Daemon | None] = field(default_factory=list)

    @property
    def master_url(self) -> str:
        """``spark://HOST:PORT``, for ``--master``."""
        return f"spark://{self.spec.host}:{self.master_port}"

    @property
    def webui_url(self) -> str:
        """The master's web UI (its JSON status is at ``/json/``)."""
        return f"http://{self.spec.host}:{self.webui_port}"

    # --- life cycle -----------------------------------------------------------------------------------------------

    @classmethod
    def start(cls, work_dir: str | Path, spec: ClusterSpec | None = None, *, env: Mapping[str, str] | None = None,
              ready_timeout_s: float = READY_TIMEOUT_S) -> StandaloneCluster:
        """Start the master and ``spec.workers`` workers under ``work_dir`` and wait until every worker is
        registered; raise :class:`ClusterError` (after stopping what started) when that does not happen."""
        from groupcoord.spark.submit import spark_home

        started = time.monotonic()
        spec = spec or ClusterSpec()
        work = Path(work_dir).resolve()
        (work / "logs").mkdir(parents=True, exist_ok=True)
        daemon_env = {**os.environ, **(env or {}), "SPARK_HOME": str(spark_home()),
                      "SPARK_DAEMON_MEMORY": spec.daemon_memory, "SPARK_DAEMON_JAVA_OPTS": DAEMON_JAVA_OPTIONS,
                      "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false", "SPARK_LOCAL_IP": spec.host}
        for attempt in range(1, _START_ATTEMPTS + 1):
            cluster = cls(spec, work, free_port(spec.host), free_port(spec.host), daemon_env)
            try:
                cluster._start_master(ready_timeout_s)
                break
            except ClusterError as exc:
                cluster.stop()
                if attempt == _START_ATTEMPTS or "BindException" not in str(exc):
                    raise
                log.warning("%s; starting again on other ports", exc)
        try:
            for index in range(spec.workers):
                cluster.workers.append(None)
                cluster.start_worker(index, wait=False)
            cluster.wait_for_workers(spec.workers, ready_timeout_s)
        except BaseException:
            cluster.stop()
            raise
        log.info("spark standalone cluster %s ready: %d workers x %d cores in %.1f s (logs %s)", cluster.master_url,
                 spec.workers, spec.cores, time.monotonic() - started, work / "logs")
        return cluster

    def _start_master(self, timeout_s: float) -> None:
        log.info("starting the spark master on %s (log %s)", self.master_url, self.work_dir / "logs" / "master.log")
        self.master = self._launch("master", [MASTER_CLASS, "--host", self.spec.host, "--port", str(self.master_port),
                                              "--webui-port", str(self.webui_port)])
        deadline = time.monotonic() + timeout_s
        while True:
            self._check_alive(self.master)
            try:
                if self.status().get("status") == "ALIVE":
                    return
            except (OSError, ValueError):
                pass
            if time.monotonic() > deadline:
                raise ClusterError(f"the spark master did not answer on {self.webui_url} within {timeout_s:.0f} s "
                                   f"(see {self.master.log_path})")
            time.sleep(_POLL_S)

    def start_worker(self, index: int, *, wait: bool = True, timeout_s: float = READY_TIMEOUT_S) -> None:
        """Start worker ``index`` (again, after it was killed); with ``wait``, until the master registered it."""
        current = self.workers[index]
        if current is not None and current.process.poll() is None:
            raise ClusterError(f"worker {index} is running (pid {current.process.pid})")
        before = {w["id"] for w in self.alive_workers()} if wait else set()
        log.info("starting spark worker %d (%d cores, %s; log %s)", index, self.spec.cores, self.spec.memory,
                 self.work_dir / "logs" / f"worker-{index}.log")
        self.workers[index] = self._launch(f"worker-{index}", [
            WORKER_CLASS, "--host", self.spec.host, "--port", "0", "--webui-port", "0",
            "--cores", str(self.spec.cores), "--memory", self.spec.memory,
            "--work-dir", str(self.work_dir / "work" / f"worker-{index}"), self.master_url])
        if wait:
            self._wait(lambda: bool({w["id"] for w in self.alive_workers()} - before), timeout_s,
                       f"worker {index} did not register with {self.master_url}")

    def _launch(self, name: str, arguments: list[str]) -> _Daemon:
        from groupcoord.spark.submit import spark_home

        log_path = self.work_dir / "logs" / f"{name}.log"
        log_start = log_path.stat().st_size if log_path.exists() else 0
        with log_path.open("ab") as output:
            process = subprocess.Popen([str(spark_home() / "bin" / "spark-class"), *arguments], env=self.env,
                                       stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                                       start_new_session=True, preexec_fn=die_with_parent())
        log.debug("started %s (pid %d, log %s)", name, process.pid, log_path)
        return _Daemon(name, process, log_path, log_start)

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """Stop the workers (SIGTERM: each stops its executors), then the master; SIGKILL what is left after
        ``timeout_s``, executors included."""
        leftovers = [pid for daemon in self.workers if daemon is not None for pid in descendants(daemon.process.pid)]
        for daemons in ([d for d in self.workers if d is not None], [self.master] if self.master else []):
            for daemon in daemons:
                if daemon.process.poll() is None:
                    daemon.process.send_signal(signal.SIGTERM)
            for daemon in daemons:
                try:
                    daemon.process.wait(timeout_s)
                except subprocess.TimeoutExpired:
                    log.warning("%s did not stop within %.0f s: killing it", daemon.name, timeout_s)
                    daemon.process.kill()
                    daemon.process.wait()
        for pid in leftovers:
            if alive(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.stop()

    # --- what runs ------------------------------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """The master's JSON status (``workers``, ``aliveworkers``, ``activeapps``, ``status``...)."""
        with urllib.request.urlopen(f"{self.webui_url}/json/", timeout=5) as response:
            status: dict[str, Any] = json.loads(response.read())
            return status

    def alive_workers(self) -> list[dict[str, Any]]:
        """The workers the master has registered and sees alive."""
        return [w for w in self.status().get("workers", []) if w.get("state") == "ALIVE"]

    def wait_for_workers(self, count: int, timeout_s: float = READY_TIMEOUT_S) -> None:
        """Wait until ``count`` workers are registered and alive."""
        self._wait(lambda: len(self.alive_workers()) == count, timeout_s,
                   f"{count} workers did not register with {self.master_url}")

    def worker_pid(self, index: int) -> int | None:
        """The JVM of worker ``index`` (``spark-class`` execs it), or ``None`` once it has ended."""
        daemon = self.workers[index]
        return daemon.process.pid if daemon is not None and daemon.process.poll() is None else None

    def executors(self) -> list[Executor]:
        """Every executor JVM the workers run now."""
        found = []
        for index, daemon in enumerate(self.workers):
            if daemon is None or daemon.process.poll() is not None:
                continue
            for pid in descendants(daemon.process.pid):
                argv = command_line(pid)
                if EXECUTOR_CLASS in argv and alive(pid):
                    found.append(Executor(pid, index, _argument(argv, "--executor-id"), _argument(argv, "--app-id")))
        return found

    def kill_worker(self, index: int, signum: int = signal.SIGKILL) -> int:
        """Send ``signum`` (SIGKILL by default) to worker ``index``'s JVM and wait for it to end; returns its pid.
        Its executors notice and exit by themselves; :meth:`start_worker` starts it again."""
        daemon = self.workers[index]
        if daemon is None or daemon.process.poll() is not None:
            raise ClusterError(f"worker {index} is not running")
        daemon.process.send_signal(signum)
        daemon.process.wait(STOP_TIMEOUT_S)
        self.workers[index] = None  # an expected end: not a daemon that died
        return daemon.process.pid

    # --- helpers --------------------------------------------------------------------------------------------------

    def _check_alive(self, daemon: _Daemon) -> None:
        code = daemon.process.poll()
        if code is not None:
            cause = _first_error(daemon.log_path, daemon.log_start)
            raise ClusterError(f"the spark {daemon.name} exited with code {code}"
                               f"{': ' + cause if cause else ''} (see {daemon.log_path})")

    def _wait(self, done: Any, timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            for daemon in [self.master, *self.workers]:
                if daemon is not None:
                    self._check_alive(daemon)
            try:
                if done():
                    return
            except (OSError, ValueError):
                pass
            if time.monotonic() > deadline:
                raise ClusterError(f"{what} within {timeout_s:.0f} s (see {self.work_dir / 'logs'})")
            time.sleep(_POLL_S)


def _argument(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1] if flag in argv[:-1] else ""


def _first_error(log_path: Path, since: int) -> str | None:
    """The first line naming an exception or an ERROR in a daemon's log from byte ``since`` on."""
    try:
        with log_path.open("rb") as stream:
            stream.seek(since)
            lines = stream.read().decode(errors="replace").splitlines()
    except OSError:
        return None
    return next((line.strip() for line in lines if "Exception" in line or " ERROR " in line), None)
