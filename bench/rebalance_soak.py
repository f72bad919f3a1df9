"""Rebalance soak (issue 16): rounds of leave and rejoin with three kafka-python consumers on one ``serve``.

Three real kafka-python consumers, each polling every 50 ms on a thread of its own, share a 12-partition topic in one
group. A round closes one consumer (LeaveGroup), waits until the two survivors hold a stable assignment, then starts
a fresh consumer and waits until the three do. Both strategies run on the same server, one after the other: the
coordinator's ``server-cooperative-sticky`` (:class:`~groupcoord.member.kafka_python.ServerSideAssignor`, assigned
by Spark in ``serve``) and kafka-python's own cooperative-sticky, assigned by the group's leader.

Each consumer fetches its topic's metadata before its first poll: a leader that assigns before its metadata arrives
rejoins when it does, and kafka-python 3.0.12 can strand that rejoin when a short poll times out (docs/compatibility.md;
it happens against Kafka's own coordinator too, in 1 of 6 first joins measured).

The group is *stable* when every consumer, seen from its own polling thread, is in a stable generation with no rejoin
pending, all are in the same generation, and their assignments are disjoint, cover every partition and differ by at
most one partition in size. Each wait is limited (10 s by default); a consumer whose ``poll`` raises fails the run.

``python -m bench.rebalance_soak [--rounds N]``; ``make bench`` runs 10 rounds, ``make bench-full`` 100; the tests run
10 rounds (tests/server/test_rebalance_soak.py).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka import KafkaConsumer
from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
from kafka.coordinator.base import MemberState

from bench.results_io import write_result
from bench.serve_process import ServeProcess
from groupcoord.member.kafka_python import ServerSideAssignor

TOPIC = "soak"
PARTITIONS = 12
MEMBERS = 3
POLL_MS = 50
STABLE_TIMEOUT_S = 10.0
SERVE_READY_S = 120.0
WARMED = "warmed the planner"
"""What serve logs once its planner warm-up is over (:mod:`groupcoord.assignment.warmup`)."""
STRATEGIES: dict[str, Any] = {"server-cooperative-sticky": ServerSideAssignor,
                              "client-cooperative-sticky": CooperativeStickyAssignor}


@dataclass(frozen=True)
class Snapshot:
    """What one consumer's polling thread saw after its last poll."""

    partitions: frozenset[int]
    generation: int
    settled: bool


class PollingConsumer:
    """A kafka-python consumer polled every 50 ms on a thread of its own, publishing a :class:`Snapshot`."""

    def __init__(self, bootstrap: str, group: str, strategy: Any, name: str) -> None:
        self.name = name
        self.consumer = KafkaConsumer(TOPIC, bootstrap_servers=bootstrap, group_id=group, client_id=name,
                                      enable_auto_commit=False, partition_assignment_strategy=[strategy],
                                      session_timeout_ms=10_000, heartbeat_interval_ms=500)
        # Topic metadata before the first poll, as kafka-python users are told to: a leader that assigns before its
        # metadata arrives rejoins when it does, a rejoin kafka-python 3.0.12 can strand (docs/compatibility.md; it
        # happens against Kafka's own coordinator too).
        if not self.consumer.partitions_for_topic(TOPIC):
            raise SoakFailure(f"{name}: no metadata for topic {TOPIC}")
        self.snapshot = Snapshot(frozenset(), -1, settled=False)
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"soak-{name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        coordinator = self.consumer._coordinator  # the member's own view: generation and pending rejoin
        while not self._stop.is_set():
            try:
                self.consumer.poll(timeout_ms=POLL_MS)
            except Exception as exc:  # a poll that raises is a failure of the run, reported by the waiter
                self.error = exc
                return
            settled = coordinator.state is MemberState.STABLE and not coordinator.need_rejoin()
            self.snapshot = Snapshot(frozenset(tp.partition for tp in self.consumer.assignment()),
                                     coordinator._generation.generation_id, settled)

    def close(self) -> None:
        """Stop polling, then close the consumer (it sends LeaveGroup)."""
        self._stop.set()
        self._thread.join(30)
        self.consumer.close()


def is_stable(snapshots: Sequence[Snapshot]) -> bool:
    """Every consumer settled in one generation, the partitions split disjointly, completely and evenly."""
    if not snapshots or not all(s.settled for s in snapshots):
        return False
    if len({s.generation for s in snapshots}) != 1:
        return False
    sizes = [len(s.partitions) for s in snapshots]
    owned = frozenset().union(*(s.partitions for s in snapshots))
    return sum(sizes) == PARTITIONS and len(owned) == PARTITIONS and max(sizes) - min(sizes) <= 1


class SoakFailure(AssertionError):
    """A round did not reach a stable assignment in time, or a consumer's poll raised."""


def wait_stable(consumers: Sequence[PollingConsumer], timeout_s: float, what: str) -> float:
    """Seconds until ``consumers`` are stable; raises :class:`SoakFailure` on a poll error or after ``timeout_s``."""
    started = time.perf_counter()
    while True:
        for consumer in consumers:
            if consumer.error is not None:
                raise SoakFailure(f"{what}: {consumer.name}'s poll raised {consumer.error!r}")
        if is_stable([c.snapshot for c in consumers]):
            return time.perf_counter() - started
        if time.perf_counter() - started > timeout_s:
            seen = {c.name: c.snapshot for c in consumers}
            raise SoakFailure(f"{what}: not stable after {timeout_s:.0f} s: {seen}")
        time.sleep(0.01)


@dataclass
class SoakRun:
    """The times to a stable group of one strategy: the first join, then each round's leave and rejoin."""

    strategy: str
    first_join_s: float = 0.0
    leave_s: list[float] = field(default_factory=list)
    rejoin_s: list[float] = field(default_factory=list)


def soak(bootstrap: str, strategy: str, *, rounds: int, timeout_s: float = STABLE_TIMEOUT_S,
         progress: bool = False) -> SoakRun:
    """``rounds`` rounds of leave and rejoin in a fresh group; raises :class:`SoakFailure` at the first miss."""
    group = f"soak-{strategy}-{time.monotonic_ns()}"
    run = SoakRun(strategy)
    names = iter(f"{strategy[:6]}-{i}" for i in range(10_000))
    consumers = [PollingConsumer(bootstrap, group, STRATEGIES[strategy], next(names)) for _ in range(MEMBERS)]
    try:
        run.first_join_s = wait_stable(consumers, max(timeout_s, SERVE_READY_S / 2), f"{strategy} first join")
        for round_no in range(rounds):
            consumers.pop(round_no % MEMBERS).close()
            run.leave_s.append(wait_stable(consumers, timeout_s, f"{strategy} round {round_no} leave"))
            consumers.insert(round_no % MEMBERS, PollingConsumer(bootstrap, group, STRATEGIES[strategy], next(names)))
            run.rejoin_s.append(wait_stable(consumers, timeout_s, f"{strategy} round {round_no} rejoin"))
            if progress and (round_no + 1) % 10 == 0:
                print(f"  {strategy}: {round_no + 1}/{rounds} rounds, last leave {run.leave_s[-1]:.2f} s, "
                      f"rejoin {run.rejoin_s[-1]:.2f} s", flush=True)
    finally:
        for consumer in consumers:
            consumer.close()
    return run


def start_serve(root: Path, log_path: Path, ready_s: float = SERVE_READY_S, *,
                warm: bool = True) -> tuple[ServeProcess, str]:
    """A ``serve`` with Spark and no initial rebalance delay, on a fresh state root holding the soak topic, once its
    planner warm-up is done (within ``ready_s`` for each of the two). ``warm=False`` turns the warm-up off and does
    not wait for it: the soak's groups are small, so the assignors' driver engine assigns them and Spark never starts
    (what ``make test`` runs; the benchmark measures a warmed server)."""
    subprocess.run([sys.executable, "-m", "groupcoord", "topics", "create", TOPIC, "--partitions", str(PARTITIONS),
                    "--state-root", str(root)], check=True, capture_output=True)
    serve = ServeProcess(root, "--conf", "group.initial.rebalance.delay.ms=0", "--conf",
                         f"assignor.warmup={str(warm).lower()}", log_path=log_path, spark=True)
    address = serve.wait_ready(ready_s)
    # The soak measures rebalances of a running server: its Spark planner warm-up (begun at start-up) is over.
    if address is None or (warm and not serve.wait_logged(WARMED, ready_s)):
        tail = serve.log_tail()
        serve.close()
        raise RuntimeError(f"serve did not start and warm up:\n{tail}")
    return serve, f"{address[0]}:{address[1]}"


def distribution(seconds: Sequence[float]) -> dict[str, float]:
    """p50, p90, p99 and max of ``seconds`` (nearest rank)."""
    ordered = sorted(seconds)

    def rank(q: float) -> float:
        return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]

    return {"p50_s": round(statistics.median(ordered), 3), "p90_s": round(rank(0.9), 3),
            "p99_s": round(rank(0.99), 3), "max_s": round(ordered[-1], 3)}


def _rows(target: str, run: SoakRun) -> list[dict[str, Any]]:
    rows = [{"target": target, "strategy": run.strategy, "transition": "first join", "n": 1,
             **distribution([run.first_join_s])}]
    for transition, times in (("leave", run.leave_s), ("rejoin", run.rejoin_s)):
        rows.append({"target": target, "strategy": run.strategy, "transition": transition, "n": len(times),
                     **distribution(times)})
    return rows


def main(full: bool, rounds: int | None = None) -> None:
    """Soak both strategies on one server, then the client-side one on Kafka's own coordinator (the dev broker, with
    the same initial rebalance delay), and record the distributions of times to a stable group."""
    from groupcoord.devbroker import PEER_JVM_OPTIONS, KafkaBroker

    rounds = rounds if rounds is not None else (100 if full else 10)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="soak-") as scratch:
        serve, bootstrap = start_serve(Path(scratch) / "state", Path(scratch) / "serve.log")
        try:
            for strategy in STRATEGIES:
                try:
                    rows.extend(_rows("groupcoord serve", soak(bootstrap, strategy, rounds=rounds, progress=True)))
                except SoakFailure:
                    print(f"serve's log, last lines:\n{serve.log_tail(60)}", file=sys.stderr, flush=True)
                    raise
        finally:
            serve.close()
        with KafkaBroker.start(Path(scratch) / "kafka", properties={"group.initial.rebalance.delay.ms": 0},
                               jvm_options=PEER_JVM_OPTIONS) as broker:
            broker.create_topic(TOPIC, partitions=PARTITIONS)
            strategy = "client-cooperative-sticky"
            rows.extend(_rows("Kafka 4.4.0 broker", soak(broker.bootstrap, strategy, rounds=rounds, progress=True)))
    for row in rows:
        print(row, flush=True)
    write_result("rebalance_soak", title="Rebalance soak: 3 kafka-python consumers, leave and rejoin",
                 rows=rows, summary={"rounds": rounds, "timeout_s": STABLE_TIMEOUT_S},
                 notes=(f"{rounds} rounds per strategy on one `groupcoord serve` (Spark on, "
                        "group.initial.rebalance.delay.ms=0), 12 partitions, kafka-python 3.0.12 consumers polling "
                        "every 50 ms, session 10 s, heartbeat 0.5 s. A round closes one consumer and waits for a "
                        "stable group of two, then starts a fresh consumer and waits for a stable group of three. "
                        "Every wait must end within 10 s. The groups start once serve has started Spark and warmed its "
                        "planner; 'first join' is a fresh group's first rebalance. The client-side strategy then runs "
                        "the same rounds against Kafka's own coordinator (the dev broker, initial delay 0)."))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="bench.rebalance_soak")
    parser.add_argument("--rounds", type=int, default=None, help="rounds per strategy (default 10, 100 with --full)")
    parser.add_argument("--full", action="store_true")
    cli = parser.parse_args()
    main(cli.full, cli.rounds)
