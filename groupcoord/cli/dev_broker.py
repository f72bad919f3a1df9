"""``groupcoord dev-broker``: a real single-node Apache Kafka broker for local development and tests.

Readiness is one line on stdout, ``kafka broker listening on HOST:PORT``, printed once the broker answers a Kafka
Metadata request. The broker's WARN and ERROR lines go to stderr, its full log to ``LOG_DIR/broker.log``. SIGTERM or
SIGINT stop it cleanly (exit 0); a broker that dies on its own exits 1. As with Kafka's own scripts, ``$KAFKA_OPTS``
adds JVM options.
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys
import threading
from typing import Any

from groupcoord.cli.errors import CliError, UsageError

READY_LINE = "kafka broker listening on {bootstrap}"
# What the JVM exits with after a SIGTERM-triggered shutdown (128 + 15): a clean stop.
JVM_EXIT_ON_SIGTERM = 143


def register(subparsers: Any, parent: argparse.ArgumentParser) -> None:
    """Add the ``dev-broker`` subcommand (no state root: of the common options it takes only ``--debug``)."""
    parser = subparsers.add_parser(
        "dev-broker", help="run a real single-node Apache Kafka broker (KRaft), for development and tests",
        description="Run Apache Kafka (broker and KRaft controller in one JVM) from the jars `make install` fetched, "
                    "on one address. Not for production: no security, one replica of everything.",
        epilog="$KAFKA_OPTS adds JVM options (as with Kafka's own scripts).")
    parser.add_argument("--listen", metavar="HOST:PORT", default="127.0.0.1:9092",
                        help="the client listener (default 127.0.0.1:9092; port 0 picks a free port)")
    parser.add_argument("--log-dir", metavar="DIR", required=True,
                        help="the broker's directory: data, server.properties, broker.log (formatted when new)")
    parser.add_argument("--property", metavar="KEY=VALUE", action="append", default=[],
                        help="override a server.properties setting; repeatable")
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Start the broker, print the readiness line, and stop it on SIGTERM or SIGINT."""
    from groupcoord.devbroker import JVM_OPTIONS, BrokerError, KafkaBroker, parse_listen

    try:
        parse_listen(args.listen)
    except ValueError as exc:
        raise UsageError(f"--listen: {exc}") from None
    properties = dict(_property(item) for item in args.property)

    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    try:
        broker = KafkaBroker.start(args.log_dir, listen=args.listen, properties=properties, output=sys.stderr,
                                   jvm_options=(*JVM_OPTIONS, *shlex.split(os.environ.get("KAFKA_OPTS", ""))))
    except BrokerError as exc:
        if stop.is_set():  # Ctrl-C while starting: the terminal's SIGINT stopped the JVM too
            return 0
        raise CliError(str(exc)) from None
    with broker:
        sys.stdout.write(READY_LINE.format(bootstrap=broker.bootstrap) + "\n")
        sys.stdout.flush()
        while not stop.wait(0.5):
            code = broker.poll()
            if code is not None:
                raise CliError(f"the kafka broker exited with code {code} (see {broker.layout.broker_log})")
        code = broker.stop()
    if code not in (0, JVM_EXIT_ON_SIGTERM):
        raise CliError(f"the kafka broker stopped with code {code} (see {broker.layout.broker_log})")
    return 0


def _property(item: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    if not sep or not key.strip():
        raise UsageError(f"--property: expected KEY=VALUE, got {item!r}")
    return key.strip(), value
