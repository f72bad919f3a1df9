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

**A driver pair** (:class:`Replicas`, ``supervise --replicas 2``): two instances of the same command, each under a
supervisor of its own (restarted on its own), each told its index in :data:`DRIVER_INSTANCE_ENV` (``0``, ``1``), which
the ingestion job turns into a checkpoint prefix of its own (two running queries must never share a checkpoint);
each instance's pid file is ``<stem>-<index><suffix>`` and each line it prints is prefixed ``[driver <index>]``.
``--instance I`` runs one instance of a pair whose other instance runs elsewhere (another host).

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
import sys
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from groupcoord.cluster.processes import descendants, die_with_parent, kill_group

log = logging.getLogger("groupcoord.cluster.supervisor")

EXIT_USAGE = 2
DRIVER_INSTANCE_ENV = "GROUPCOORD_DRIVER_INSTANCE"
"""The environment variable that tells an instance of a driver pair its index (``0``, ``1``, ...)."""
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
                 pid_file: str | Path | None = None, stop_timeout_s: float = 60.0, name: str | None = None,
                 output: IO[bytes] | None = None) -> None:
        """``name`` (``driver 1``) labels the supervisor's log lines and, with ``output``, prefixes each line the
        command prints, copied there (else the command prints to this process's stdout and stderr directly)."""
        if not command:
            raise ValueError("supervise: no command given")
        self.command = list(command)
        self.name = name
        self.output = output
        self._label = f"supervise [{name}]" if name else "supervise"
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
                log.info("%s: pid %d %s after a stop request", self._label, run.pid, describe_exit(run.code))
                return shell_code(run.code)
            if run.code in self.policy.final_codes:
                log.info("%s: pid %d %s after %.1f s: done", self._label, run.pid, describe_exit(run.code), lasted)
                return shell_code(run.code)
            now = time.monotonic()
            while restarts and now - restarts[0] > self.policy.window_s:
                restarts.popleft()
            if len(restarts) >= self.policy.max_restarts:
                log.error("%s: pid %d %s; giving up after %d restarts within %.0f s", self._label, run.pid,
                          describe_exit(run.code), len(restarts), self.policy.window_s)
                return shell_code(run.code)
            if lasted >= STABLE_RUN_S:
                backoff = self.policy.backoff_s
            log.warning("%s: pid %d %s after %.1f s; starting it again in %.1f s (restart %d)", self._label, run.pid,
                        describe_exit(run.code), lasted, backoff, len(self.runs))
            if self._stop.wait(backoff):
                return shell_code(run.code)
            restarts.append(time.monotonic())
            backoff = min(max(backoff * 2, self.policy.backoff_s), self.policy.backoff_max_s)

    def _run_once(self) -> Run:
        started = time.time()
        piped = subprocess.PIPE if self.output is not None else None
        child = subprocess.Popen(self.command, env=self.env, cwd=self.cwd, stdin=subprocess.DEVNULL, stdout=piped,
                                 stderr=subprocess.STDOUT if piped else None, start_new_session=True,
                                 preexec_fn=die_with_parent())
        pump = self._pump(child) if child.stdout is not None else None
        if self.pid_file is not None:
            self.pid_file.parent.mkdir(parents=True, exist_ok=True)
            self.pid_file.write_text(f"{child.pid}\n")
        log.info("%s: started pid %d (run %d): %s", self._label, child.pid, len(self.runs) + 1, " ".join(self.command))
        code = self._wait(child)
        if kill_group(child.pid):
            log.info("%s: killed what pid %d left in its process group", self._label, child.pid)
        if pump is not None:
            pump.join(5)  # the group is dead: its pipe's end comes at once
        return Run(child.pid, started, time.time(), code)

    def _pump(self, child: subprocess.Popen[bytes]) -> threading.Thread:
        """Copy what ``child`` (and whatever it starts) prints to :attr:`output`, each line prefixed with the name."""
        assert child.stdout is not None and self.output is not None
        source, target, prefix = child.stdout, self.output, f"[{self.name}] ".encode()

        def copy() -> None:
            with source:
                for line in source:
                    # Read on when the output is gone (a closed pipe): a full pipe would block the command.
                    with _OUTPUT_LOCK, contextlib.suppress(OSError, ValueError):
                        target.write(prefix + line)
                        target.flush()

        thread = threading.Thread(target=copy, name=f"supervise-output-{child.pid}", daemon=True)
        thread.start()
        return thread

    def _pass_on(self, child: subprocess.Popen[bytes]) -> None:
        """Send the stop signal to the processes the command started in its group, or to the command itself when it
        started none. Under spark-submit that is the Python driver, which stops its queries, leaves and exits 0,
        and spark-submit's JVM exits after it; signalled too, the JVM would exit at once (143) and take the driver's
        clean stop with it."""
        below = [pid for pid in descendants(child.pid) if _group_of(pid) == child.pid]
        name = self._stop_signal.name
        if not below:
            log.info("%s: passing %s on to pid %d", self._label, name, child.pid)
            child.send_signal(self._stop_signal)
            return
        log.info("%s: passing %s on to pid(s) %s, started by pid %d", self._label, name, ", ".join(map(str, below)),
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
            log.warning("%s: pid %d did not end within %.0f s of %s: killing its process group", self._label, child.pid,
                        self.stop_timeout_s, self._stop_signal.name)
            kill_group(child.pid)
            return child.wait()


_OUTPUT_LOCK = threading.Lock()
"""One line at a time on the shared output, whichever instance printed it."""


def instance_pid_file(pid_file: str | Path, instance: int) -> Path:
    """Instance ``instance``'s pid file: ``var/driver.pid`` -> ``var/driver-1.pid``."""
    path = Path(pid_file)
    return path.with_name(f"{path.stem}-{instance}{path.suffix}")


def instance_environment(instance: int, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``env`` (this process's environment by default) with :data:`DRIVER_INSTANCE_ENV` set to ``instance``."""
    if instance < 0:
        raise ValueError(f"a driver instance is a number from 0 (got {instance})")
    return {**(os.environ if env is None else env), DRIVER_INSTANCE_ENV: str(instance)}


class Replicas:
    """``count`` instances of one command (a driver pair: ``count=2``), each under a :class:`Supervisor` of its own,
    restarted on its own, told its index in :data:`DRIVER_INSTANCE_ENV`, with its own pid file
    (:func:`instance_pid_file`) and its output prefixed ``[driver <index>]`` (see the module)."""

    def __init__(self, command: Sequence[str], count: int, *, policy: RestartPolicy | None = None,
                 env: Mapping[str, str] | None = None, cwd: str | Path | None = None,
                 pid_file: str | Path | None = None, stop_timeout_s: float = 60.0,
                 output: IO[bytes] | None = None) -> None:
        if count < 1:
            raise ValueError(f"supervise: at least one instance (got {count})")
        out = output if output is not None else sys.stdout.buffer
        self.supervisors = [
            Supervisor(command, policy=policy, env=instance_environment(index, env), cwd=cwd,
                       pid_file=instance_pid_file(pid_file, index) if pid_file is not None else None,
                       stop_timeout_s=stop_timeout_s, name=f"driver {index}", output=out)
            for index in range(count)]

    def request_stop(self, signum: int = signal.SIGTERM) -> None:
        """Pass ``signum`` on to every instance and end their supervision (safe from a signal handler)."""
        for supervisor in self.supervisors:
            supervisor.request_stop(signum)

    def run(self) -> int:
        """Supervise every instance until each has ended (see :meth:`Supervisor.run`); 0 when all ended with 0,
        else the first failing instance's code."""
        codes: dict[int, int] = {}

        def supervise(index: int, supervisor: Supervisor) -> None:
            try:
                codes[index] = supervisor.run()
            except OSError as exc:
                log.error("supervise [driver %d]: cannot run %s: %s", index, supervisor.command[0],
                          exc.strerror or exc)
                codes[index] = 127

        # Each instance's command is started from its own thread, which lives as long as the command: the parent
        # death signal (die_with_parent) follows the thread that started the child.
        threads = [threading.Thread(target=supervise, args=(index, supervisor), name=f"supervise-driver-{index}")
                   for index, supervisor in enumerate(self.supervisors)]
        for thread in threads:
            thread.start()
        for thread in threads:
            while thread.is_alive():
                thread.join(0.5)  # wake up for the signal handlers, which run in this (the main) thread
        return next((codes[i] for i in sorted(codes) if codes[i] != 0), 0)
