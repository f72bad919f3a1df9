"""A supervisor that runs a command and starts it again when it fails: the driver of a Python application in client
mode, which Spark cannot restart itself (``--deploy-mode cluster``, and with it ``--supervise``, is refused for
Python applications on a standalone master).

::

    groupcoord cluster supervise --pid-file var/driver.pid -- bin/spark-submit --master spark://HOST:7077 \\
        jobs/streaming_ingest.py --group orders-ingest --topics orders --sink /shared/lake/orders_raw

- The command runs in a process group of its own. When its first process ends, whatever it left in that group (the
  Python driver under spark-submit's JVM, its Python workers) is killed before anything else happens, so a half-dead
  driver can never hold the coordinator's lease while its successor starts.
- Exit code 0 (a finished or stopped job) and 2 (bad configuration: it would fail again) end the supervisor with
  that code; any other end (a failure, a signal, SIGKILL) starts the command again after a backoff (1 s, doubling
  up to 30 s; back to 1 s after a run of at least a minute), at most ``max_restarts`` times within ``window_s``.
- SIGTERM or SIGINT to the supervisor is passed on to the processes the command started in its group (the command
  itself when it started none): under spark-submit, the Python driver, so the ingestion job stops its queries,
  leaves and exits 0, and spark-submit's JVM after it. It ends the supervision; the group is killed when the command
  has not ended within ``stop_timeout_s``.
- ``pid_file`` holds the running command's pid (its process group); each start rewrites it.
- On Linux the command gets SIGKILL when the supervisor dies.

A restarted driver of the ingestion job takes the coordinator's lease over once the dead one's lease expires
(``lease.timeout.ms`` + ``lease.safety.ms`` after its last renewal), its queries go on from their checkpoints, and the
group re-forms. Across hosts the lease assumes clocks that differ by less than ``lease.safety.ms`` (2 s by default):
run NTP (chrony) on the driver's hosts.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from groupcoord.cluster.processes import descendants, die_with_parent, kill_group

log = logging.getLogger("groupcoord.cluster.supervisor")

EXIT_USAGE = 2
STABLE_RUN_S = 60.0
"""A run at least this long resets the backoff to its first step."""


@dataclass(frozen=True, kw_only=True)
class RestartPolicy:
    """When the supervisor starts a command again, and how long it waits first."""

    max_restarts: int = 10
    window_s: float = 600.0
    backoff_s: float = 1.0
    backoff_max_s: float = 30.0
    final_codes: frozenset[int] = field(default_factory=lambda: frozenset({0, EXIT_USAGE}))

    def __post_init__(self) -> None:
        if self.max_restarts < 0 or self.window_s <= 0 or self.backoff_s < 0 or self.backoff_max_s < self.backoff_s:
            raise ValueError("restart policy: max_restarts >= 0, window_s > 0 and 0 <= backoff_s <= backoff_max_s")


@dataclass(frozen=True)
class Run:
    """One run of the command: its pid, when it started and ended (``time.time()``), and its exit code (negative:
    the signal that ended it)."""

    pid: int
    started: float
    ended: float
    code: int


def _group_of(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def describe_exit(code: int) -> str:
    """``exited with code 1`` or ``was killed by SIGKILL``."""
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def shell_code(code: int) -> int:
    """A Popen return code as a shell reports it (128 + N for a signal)."""
    return 128 - code if code < 0 else code


class Supervisor:
    """Runs ``command`` until it ends with a final code, starting it again after failures (see the module)."""

    def __init__(self, command: Sequence[str], *, policy: RestartPolicy | None = None,
                 env: Mapping[str, str] | None = None, cwd: str | Path | None = None,
                 pid_file: str | Path | None = None, stop_timeout_s: float = 60.0) -> None:
        if not command:
            raise ValueError("supervise: no command given")
        self.command = list(command)
        self.policy = policy or RestartPolicy()
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.pid_file = Path(pid_file) if pid_file is not None else None
        self.stop_timeout_s = stop_timeout_s
        self.runs: list[Run] = []
        self._stop = threading.Event()
        self._stop_signal = signal.SIGTERM

    def request_stop(self, signum: int = signal.SIGTERM) -> None:
        """End the supervision: pass ``signum`` on to the running command (within half a second) and start it no
        more. Safe from a signal handler: it only sets flags, which the waiting loop acts on."""
        self._stop_signal = signal.Signals(signum)
        self._stop.set()

    def run(self) -> int:
        """Supervise until the command ends with a final code, restarts run out, or a stop is requested; returns the
        last run's exit code as a shell reports it."""
        restarts: deque[float] = deque()
        backoff = self.policy.backoff_s
        while True:
            if self._stop.is_set() and self.runs:
                return shell_code(self.runs[-1].code)
            run = self._run_once()
            self.runs.append(run)
            lasted = run.ended - run.started
            if self._stop.is_set():
                log.info("supervise: pid %d %s after a stop request", run.pid, describe_exit(run.code))
                return shell_code(run.code)
            if run.code in self.policy.final_codes:
                log.info("supervise: pid %d %s after %.1f s: done", run.pid, describe_exit(run.code), lasted)
                return shell_code(run.code)
            now = time.monotonic()
            while restarts and now - restarts[0] > self.policy.window_s:
                restarts.popleft()
            if len(restarts) >= self.policy.max_restarts:
                log.error("supervise: pid %d %s; giving up after %d restarts within %.0f s", run.pid,
                          describe_exit(run.code), len(restarts), self.policy.window_s)
                return shell_code(run.code)
            if lasted >= STABLE_RUN_S:
                backoff = self.policy.backoff_s
            log.warning("supervise: pid %d %s after %.1f s; starting it again in %.1f s (restart %d)", run.pid,
                        describe_exit(run.code), lasted, backoff, len(self.runs))
            if self._stop.wait(backoff):
                return shell_code(run.code)
            restarts.append(time.monotonic())
            backoff = min(max(backoff * 2, self.policy.backoff_s), self.policy.backoff_max_s)

    def _run_once(self) -> Run:
        started = time.time()
        child = subprocess.Popen(self.command, env=self.env, cwd=self.cwd, stdin=subprocess.DEVNULL,
                                 start_new_session=True, preexec_fn=die_with_parent())
        if self.pid_file is not None:
            self.pid_file.parent.mkdir(parents=True, exist_ok=True)
            self.pid_file.write_text(f"{child.pid}\n")
        log.info("supervise: started pid %d (run %d): %s", child.pid, len(self.runs) + 1, " ".join(self.command))
        code = self._wait(child)
        if kill_group(child.pid):
            log.info("supervise: killed what pid %d left in its process group", child.pid)
        return Run(child.pid, started, time.time(), code)

    def _pass_on(self, child: subprocess.Popen[bytes]) -> None:
        """Send the stop signal to the processes the command started in its group, or to the command itself when it
        started none. Under spark-submit that is the Python driver, which stops its queries, leaves and exits 0,
        and spark-submit's JVM exits after it; signalled too, the JVM would exit at once (143) and take the driver's
        clean stop with it."""
        below = [pid for pid in descendants(child.pid) if _group_of(pid) == child.pid]
        name = self._stop_signal.name
        if not below:
            log.info("supervise: passing %s on to pid %d", name, child.pid)
            child.send_signal(self._stop_signal)
            return
        log.info("supervise: passing %s on to pid(s) %s, started by pid %d", name, ", ".join(map(str, below)),
                 child.pid)
        for pid in below:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, self._stop_signal)

    def _wait(self, child: subprocess.Popen[bytes]) -> int:
        """Wait for ``child``; on a stop request pass the signal on, and kill its group after the stop timeout."""
        while not self._stop.is_set():
            try:
                return child.wait(0.5)
            except subprocess.TimeoutExpired:
                pass
        if child.poll() is None:
            self._pass_on(child)
        try:
            return child.wait(self.stop_timeout_s)
        except subprocess.TimeoutExpired:
            log.warning("supervise: pid %d did not end within %.0f s of %s: killing its process group", child.pid,
                        self.stop_timeout_s, self._stop_signal.name)
            kill_group(child.pid)
            return child.wait()
