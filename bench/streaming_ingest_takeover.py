"""How long a state root goes without a coordinator when the application holding it ends (issue 19).

``groupcoord.spark.register`` starts the state root's coordinator in the driver, or stands by behind the process that
holds the lease. This measures the hand-over between two such processes on one state root, with the default lease
settings: process A serves, process B stands by; A then ends, either as an application that stops its coordinator
does (SIGTERM, whose handler calls ``stop()``: it steps down and releases the lease, as ``stop_coordinator`` does) or
killed outright (SIGKILL: the lease must expire). The time is from the signal to B's first moment of serving.

Each process runs what ``register`` runs (:class:`~groupcoord.host.background.BackgroundCoordinator`,
``start_or_stand_by``) without a SparkSession, so Spark's assignment runner is not loaded: the lease hand-over is the
same, and a JVM start per round would only add noise.

    .venv/bin/python -m bench.streaming_ingest_takeover [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

READY_TIMEOUT_S = 120.0


def child(root: str) -> None:
    """One application's coordinator: serve or stand by, report it, report a take-over, step down on SIGTERM."""
    from groupcoord.config import resolve_config
    from groupcoord.host.background import BackgroundCoordinator

    coordinator = BackgroundCoordinator(root, resolve_config(), listen="127.0.0.1:0")

    def step_down(signum: int, frame: Any) -> None:
        coordinator.stop()
        sys.exit(0)

    signal.signal(signal.SIGTERM, step_down)
    address = coordinator.start_or_stand_by(READY_TIMEOUT_S)
    _report("serving" if address else "standby")
    if address is None:
        while not coordinator.serving:
            time.sleep(0.005)
        _report("took-over")
    while True:
        time.sleep(1)


def _report(event: str) -> None:
    print(json.dumps({"event": event, "t": time.time()}), flush=True)


def _spawn(root: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "bench.streaming_ingest_takeover", "--child", str(root)],
                            stdout=subprocess.PIPE, text=True)


def _next_event(process: subprocess.Popen[str]) -> dict[str, Any]:
    stream: IO[str] | None = process.stdout
    assert stream is not None
    line = stream.readline()
    if not line:
        raise RuntimeError(f"process {process.pid} ended without reporting (exit code {process.wait()})")
    event: dict[str, Any] = json.loads(line)
    return event


def one_round(ending: str) -> dict[str, float]:
    """A serves, B stands by, A ends (``exit``: SIGTERM, ``kill``: SIGKILL); the seconds until B serves."""
    with tempfile.TemporaryDirectory(prefix="gc-takeover-") as tmp:
        root = Path(tmp) / "root"
        holder = _spawn(root)
        standby: subprocess.Popen[str] | None = None
        try:
            assert _next_event(holder)["event"] == "serving"
            standby = _spawn(root)
            assert _next_event(standby)["event"] == "standby"
            time.sleep(3.0)  # a few lease renewals: the holder is in its steady state
            ended = time.time()
            holder.send_signal(signal.SIGTERM if ending == "exit" else signal.SIGKILL)
            holder.wait(60)
            exited = time.time()
            took_over = _next_event(standby)
            assert took_over["event"] == "took-over"
            return {"takeover_s": took_over["t"] - ended, "holder_exit_s": exited - ended}
        finally:
            for process in (holder, standby):
                if process is not None and process.poll() is None:
                    process.kill()
                    process.wait()


def main() -> None:
    """Run the rounds and print one JSON line per ending, then a summary table."""
    parser = argparse.ArgumentParser(description="Standby take-over time of a state root's coordinator.")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", metavar="ROOT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    from groupcoord.config import resolve_config

    config = resolve_config()
    lease = {k: config[k] for k in ("lease.timeout.ms", "lease.renew.interval.ms", "lease.safety.ms")}
    print(f"lease settings: {lease}")
    print("| holder ends by | rounds | takeover_s median | takeover_s max | holder exit_s median |")
    print("|---|---|---|---|---|")
    for ending in ("exit", "kill"):
        rounds = [one_round(ending) for _ in range(args.rounds)]
        takeovers = [r["takeover_s"] for r in rounds]
        exits = [r["holder_exit_s"] for r in rounds]
        print(f"| {'SIGTERM (application ends)' if ending == 'exit' else 'SIGKILL'} | {len(rounds)} | "
              f"{statistics.median(takeovers):.2f} | {max(takeovers):.2f} | {statistics.median(exits):.2f} |",
              flush=True)
        print(json.dumps({"ending": ending, "takeover_s": takeovers, "holder_exit_s": exits}), file=sys.stderr)


if __name__ == "__main__":
    main()
