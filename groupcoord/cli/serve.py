"""``groupcoord serve``: run the coordinator of a state root on the Kafka wire protocol.

Readiness is one line on stdout, ``groupcoord coordinator listening on HOST:PORT``, printed when the lease is held,
the log is loaded and the socket accepts. With ``--metrics-listen HOST:PORT`` (``metrics.listen``), ``/metrics``
and ``/health`` are served there from start to stop, standing by included (docs/metrics.md). Logs go to stderr.
SIGTERM or SIGINT stop it cleanly (exit 0).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from typing import Any

from groupcoord.cli.common import config_from_args, state_root_from_args
from groupcoord.cli.errors import UsageError

READY_LINE = "groupcoord coordinator listening on {host}:{port}"
STOP_DEADLINE_S = 10.0


def register(subparsers: Any, parent: argparse.ArgumentParser) -> None:
    """Add the ``serve`` subcommand."""
    parser = subparsers.add_parser(
        "serve", parents=[parent], help="run the group coordinator of a state root",
        description="Run the group coordinator of a state root. While another process holds the lease, stand by.",
    )
    parser.add_argument("--listen", metavar="HOST:PORT", help="address to bind (port 0 picks a free port)")
    parser.add_argument("--advertised-listener", metavar="HOST:PORT",
                        help="address clients are told to use (default: the bound address)")
    parser.add_argument("--metrics-listen", metavar="HOST:PORT",
                        help="serve /metrics (Prometheus) and /health there (metrics.listen; default: none)")
    parser.add_argument("--no-spark", action="store_true",
                        help="never start Spark: refuse server-side (server-*) protocols; consumer groups "
                             "(group.protocol=consumer) are assigned by the assignors' Python engine")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Open (or create) the state root, then serve until signalled."""
    from groupcoord.assignment.runner import driver_assignment_runner, spark_assignment_runner
    from groupcoord.host import CoordinatorHost, HostConfig
    from groupcoord.spark.session import active_or_local_session
    from groupcoord.state_root import StateRoot, StateRootError

    config = config_from_args(args, listen=args.listen, advertised_listener=args.advertised_listener,
                              metrics_listen=args.metrics_listen)
    location = state_root_from_args(args)
    assert location is not None
    try:
        root = StateRoot.open(location, create=True, storage=config.section("storage."))
    except StateRootError as exc:
        raise UsageError(str(exc)) from None
    host, _, _ = config["listen"].rpartition(":")
    if host.strip("[]") in ("0.0.0.0", "::") and not config["advertised.listener"]:
        raise UsageError(f"listening on {host} needs --advertised-listener (clients cannot connect to {host})")
    host_config = HostConfig.from_config(config)

    runner = None if args.no_spark else spark_assignment_runner(root, spark=active_or_local_session,
                                                                warm_up=config["assignor.warmup"])
    targets = (runner or driver_assignment_runner(root)).targets

    def ready(address: Any) -> None:
        sys.stdout.write(READY_LINE.format(host=address.host, port=address.port) + "\n")
        sys.stdout.flush()

    coordinator = CoordinatorHost(root, host_config, assignment_runner=runner, target_assignment_runner=targets,
                                  on_ready=ready)
    asyncio.run(_serve(coordinator))
    return 0


async def _serve(coordinator: Any) -> None:
    from groupcoord.host.coordinator_host import run_until_stopped

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await run_until_stopped(coordinator, stop, deadline_s=STOP_DEADLINE_S)
