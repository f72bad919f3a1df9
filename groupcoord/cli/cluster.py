"""``groupcoord cluster start`` and ``groupcoord cluster supervise``: a Spark standalone cluster on this machine, and a
supervisor that restarts a client-mode driver (see :mod:`groupcoord.cluster`).

``start`` prints one line on stdout once every worker is registered, ``spark standalone master spark://HOST:PORT
(N workers x C cores, web UI http://HOST:PORT)``, and runs until SIGTERM or SIGINT, which stop the workers and then the
master (exit 0); a daemon that dies on its own ends it with exit code 1. ``supervise -- COMMAND...`` exits with the
command's last exit code (128 + N for a signal); ``supervise --replicas 2 -- COMMAND...`` runs a driver pair (two
instances, each supervised on its own: :class:`~groupcoord.cluster.supervisor.Replicas`) and exits once both ended,
with 0 or the first failing instance's code; ``--instance I`` runs instance ``I`` of a pair alone.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import Any, TypeVar

from groupcoord.cli.errors import CliError, UsageError

READY_LINE = "spark standalone master {url} ({workers} workers x {cores} cores, web UI {webui})"
DEFAULT_WORK_DIR = "var/cluster"
_N = TypeVar("_N", int, float)


def register(subparsers: Any, parent: argparse.ArgumentParser) -> None:
    """Add ``cluster`` with its ``start`` and ``supervise`` subcommands (no state root: only ``--debug``)."""
    cluster = subparsers.add_parser("cluster", help="a Spark standalone cluster on this machine; a driver supervisor",
                                    description="Run a Spark standalone cluster on this machine, or a client-mode "
                                                "driver under a supervisor that restarts it.")
    cluster.set_defaults(func=_missing_subcommand)
    commands = cluster.add_subparsers(dest="cluster_command", metavar="SUBCOMMAND", parser_class=type(cluster))
    start = commands.add_parser(
        "start", help="a master and workers (each its own JVM) on one address, until SIGTERM or Ctrl-C",
        description="Start a Spark standalone master and workers from the venv's pyspark (bin/spark-class), on free "
                    "ports of one address; print the master URL once every worker is registered; stop them on "
                    "SIGTERM or Ctrl-C. Logs go to WORK_DIR/logs, executors' output to WORK_DIR/work.")
    start.add_argument("--work-dir", metavar="DIR", default=DEFAULT_WORK_DIR,
                       help=f"logs and the workers' directories (default {DEFAULT_WORK_DIR})")
    start.add_argument("--workers", type=_positive, default=2, metavar="N", help="worker JVMs (default 2)")
    start.add_argument("--cores", type=_positive, default=1, metavar="N", help="task slots per worker (default 1)")
    start.add_argument("--memory", default="1g", metavar="SIZE",
                       help="memory each worker gives its executors (default 1g)")
    start.add_argument("--host", default="127.0.0.1", help="the address every daemon binds (default 127.0.0.1)")
    start.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    start.set_defaults(func=_start)

    supervise = commands.add_parser(
        "supervise", help="run a command (a client-mode driver) and start it again when it fails",
        description="Run COMMAND in a process group of its own and start it again when it ends with another code "
                    "than 0 or 2 (or by a signal), after a backoff; SIGTERM or Ctrl-C are passed on to what it "
                    "started (spark-submit's Python driver), or to it, and end the supervision. Exits with the "
                    "command's last exit code.",
        usage="groupcoord cluster supervise [options] -- COMMAND [ARG ...]")
    supervise.add_argument("--max-restarts", type=_non_negative, default=10, metavar="N",
                           help="most restarts within --window-s before giving up (default 10)")
    supervise.add_argument("--window-s", type=_positive_float, default=600.0, metavar="S",
                           help="the window of --max-restarts (default 600)")
    supervise.add_argument("--backoff-s", type=_non_negative_float, default=1.0, metavar="S",
                           help="first wait before a restart, doubled up to 30 s (default 1)")
    supervise.add_argument("--stop-timeout-s", type=_positive_float, default=60.0, metavar="S",
                           help="after passing a stop on, how long the command may take before its process group "
                                "is killed (default 60)")
    supervise.add_argument("--pid-file", metavar="FILE",
                           help="write the running command's pid here at each start (with --replicas, instance I's "
                                "to FILE's name with -I before its suffix: driver-0.pid, driver-1.pid)")
    pair = supervise.add_mutually_exclusive_group()
    pair.add_argument("--replicas", type=_positive, default=1, metavar="N",
                      help="run N instances of COMMAND (a driver pair: 2), each restarted on its own, each told its "
                           "index (0..N-1) in GROUPCOORD_DRIVER_INSTANCE, its output prefixed [driver I] (default 1)")
    pair.add_argument("--instance", type=_non_negative, metavar="I",
                      help="run instance I of a driver pair whose other instances run elsewhere (another host): "
                           "COMMAND gets GROUPCOORD_DRIVER_INSTANCE=I")
    supervise.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    supervise.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    supervise.set_defaults(func=_supervise)


def _missing_subcommand(args: argparse.Namespace) -> int:
    raise UsageError("cluster: choose a subcommand: start, supervise")


def _start(args: argparse.Namespace) -> int:
    from groupcoord.cluster import ClusterError, ClusterSpec, StandaloneCluster

    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    spec = ClusterSpec(workers=args.workers, cores=args.cores, memory=args.memory, host=args.host)
    try:
        cluster = StandaloneCluster.start(args.work_dir, spec)
    except ClusterError as exc:
        if stop.is_set():
            return 0
        raise CliError(str(exc)) from None
    with cluster:
        sys.stdout.write(READY_LINE.format(url=cluster.master_url, workers=spec.workers, cores=spec.cores,
                                           webui=cluster.webui_url) + "\n")
        sys.stdout.flush()
        while not stop.wait(1.0):
            for daemon in [cluster.master, *cluster.workers]:
                if daemon is not None and daemon.process.poll() is not None:
                    raise CliError(f"the spark {daemon.name} exited with code {daemon.process.returncode} "
                                   f"(see {daemon.log_path})")
    return 0


def _supervise(args: argparse.Namespace) -> int:
    from groupcoord.cluster import Replicas, RestartPolicy, Supervisor
    from groupcoord.cluster.supervisor import instance_environment

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise UsageError("cluster supervise: no command given (put it after --)")
    policy = RestartPolicy(max_restarts=args.max_restarts, window_s=args.window_s, backoff_s=args.backoff_s,
                           backoff_max_s=max(30.0, args.backoff_s))
    supervisor: Supervisor | Replicas
    if args.replicas > 1:
        supervisor = Replicas(command, args.replicas, policy=policy, pid_file=args.pid_file,
                              stop_timeout_s=args.stop_timeout_s)
    else:
        env = instance_environment(args.instance) if args.instance is not None else None
        supervisor = Supervisor(command, policy=policy, env=env, pid_file=args.pid_file,
                                stop_timeout_s=args.stop_timeout_s)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda received, _: supervisor.request_stop(received))
    try:
        return supervisor.run()
    except OSError as exc:
        raise CliError(f"cluster supervise: cannot run {command[0]}: {exc.strerror or exc}") from None


def _positive(text: str) -> int:
    return _number(text, int, 1)


def _non_negative(text: str) -> int:
    return _number(text, int, 0)


def _positive_float(text: str) -> float:
    value = _number(text, float, 0.0)
    if value == 0:
        raise argparse.ArgumentTypeError(f"expected a number above 0, got {text!r}")
    return value


def _non_negative_float(text: str) -> float:
    return _number(text, float, 0.0)


def _number(text: str, kind: type[_N], minimum: _N) -> _N:
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"expected at least {minimum}, got {text!r}")
    return value
