"""A fresh ``serve``'s first rebalance, and the rebalance after a member leaves: server-side assignment against
kafka-python's client-side cooperative-sticky, same scenario, same run (issue 20).

Each repetition starts a fresh ``groupcoord serve`` (fresh state root, Spark allowed, initial rebalance delay 0) per
strategy, waits until it listens, then starts three kafka-python consumers on a 12-partition topic
(:class:`bench.rebalance_soak.PollingConsumer`) and times until the group is stable (every consumer settled in one
generation, the partitions split evenly): the *first* rebalance, counted from the moment the consumers are created
(their JoinGroup follows at once). Then one consumer closes (LeaveGroup) and the time to a stable group of two is the
*leave* rebalance. Strategies: ``server-cooperative-sticky`` (:class:`~groupcoord.member.kafka_python.
ServerSideAssignor`: the coordinator assigns; a group this small runs on the driver's Python engine, while serve
warms Spark's planner on a background thread), the same with the warm-up off, and kafka-python's own
cooperative-sticky (the leader assigns). Target: server-side p50 at most 1.25 x client-side + 0.3 s, for both.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.rebalance_soak import (
    PARTITIONS,
    SERVE_READY_S,
    STABLE_TIMEOUT_S,
    STRATEGIES,
    TOPIC,
    PollingConsumer,
    wait_stable,
)
from bench.results_io import write_result
from bench.serve_process import ServeProcess

MEMBERS = 3
VARIANTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "server-cooperative-sticky": ("server-cooperative-sticky", ()),
    "server-cooperative-sticky, no warm-up": ("server-cooperative-sticky", ("--conf", "assignor.warmup=false")),
    "client-cooperative-sticky": ("client-cooperative-sticky", ()),
}


def _once(scratch: Path, variant: str) -> tuple[float, float]:
    """One fresh serve: seconds to the first stable group, then to a stable group after one consumer left."""
    strategy, conf = VARIANTS[variant]
    root = scratch / f"state-{time.monotonic_ns()}"
    subprocess.run([sys.executable, "-m", "groupcoord", "topics", "create", TOPIC, "--partitions", str(PARTITIONS),
                    "--state-root", str(root)], check=True, capture_output=True)
    serve = ServeProcess(root, "--conf", "group.initial.rebalance.delay.ms=0", *conf, log_path=root / "serve.log",
                         spark=True)
    consumers: list[PollingConsumer] = []
    try:
        address = serve.wait_ready(SERVE_READY_S)
        if address is None:
            raise RuntimeError(f"serve did not start:\n{serve.log_tail()}")
        bootstrap = f"{address[0]}:{address[1]}"
        group = f"first-{time.monotonic_ns()}"
        started = time.perf_counter()
        consumers = [PollingConsumer(bootstrap, group, STRATEGIES[strategy], f"c{i}") for i in range(MEMBERS)]
        wait_stable(consumers, STABLE_TIMEOUT_S, f"{variant} first rebalance")
        first = time.perf_counter() - started
        consumers.pop(0).close()
        leave = wait_stable(consumers, STABLE_TIMEOUT_S, f"{variant} leave")
        return first, leave
    finally:
        for consumer in consumers:
            consumer.close()
        serve.close()


def main(full: bool) -> None:
    """Alternate the variants on fresh serves; record p50 and max of each transition."""
    repetitions = 7 if full else 3
    times: dict[str, dict[str, list[float]]] = {v: {"first": [], "leave": []} for v in VARIANTS}
    with tempfile.TemporaryDirectory(prefix="first-rebalance-") as scratch:
        for repetition in range(repetitions):
            for variant in VARIANTS:
                first, leave = _once(Path(scratch), variant)
                times[variant]["first"].append(first)
                times[variant]["leave"].append(leave)
                print(f"  {repetition}: {variant}: first {first:.2f} s, leave {leave:.2f} s", flush=True)
    client = {t: statistics.median(times["client-cooperative-sticky"][t]) for t in ("first", "leave")}
    rows: list[dict[str, Any]] = []
    for variant, by_transition in times.items():
        for transition, seconds in by_transition.items():
            p50 = statistics.median(seconds)
            bound = 1.25 * client[transition] + 0.3
            server = variant.startswith("server")
            rows.append({"strategy": variant, "transition": transition, "n": len(seconds), "p50_s": round(p50, 3),
                         "max_s": round(max(seconds), 3), "ratio_to_client": round(p50 / client[transition], 2),
                         "target_s": round(bound, 3) if server else None, "met": p50 <= bound if server else None})
    for row in rows:
        print(row, flush=True)
    write_result("assign_first_rebalance", title="A fresh serve's first rebalance: server-side vs client-side",
                 rows=rows, summary={"repetitions": repetitions},
                 notes=("Each repetition: a fresh `groupcoord serve` per strategy (Spark allowed, "
                        "group.initial.rebalance.delay.ms=0), three kafka-python 3.0.12 consumers on 12 partitions "
                        "created as soon as serve listens; 'first' runs from their creation to a stable group, "
                        "'leave' from one consumer's close to a stable group of two. Server-side groups this small "
                        "are assigned by the driver's Python engine (no Spark job); 'no warm-up' also turns off "
                        "serve's background Spark warm-up. Target: server-side p50 <= 1.25 x client-side p50 + 0.3 s."))
