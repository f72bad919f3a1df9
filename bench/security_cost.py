"""What authentication costs: PLAINTEXT against SASL_SSL (SCRAM-SHA-512), on ``serve`` and on the Kafka broker.

One after the other, each side fresh: ``serve`` (the background coordinator, fsync off as Kafka's default) with each
protocol, then one Kafka 4.4 broker with both listeners. Every client is librdkafka (confluent-kafka), the same on
both sides. Figures per target:

- ``connect_ms``: a new client's first metadata (TCP, TLS handshake and SASL exchange included), median of 20;
- ``offsets_per_s``, ``commit_p50_ms`` and ``commit_p99_ms``: :data:`COMMITTERS` clients, each committing
  :data:`PARTITIONS` offsets per synchronous OffsetCommit outside any generation, closed loop, :data:`SECONDS` s
  (thousands of commits: the p99 has its 100 samples);
- ``rebalance_ms``: a second consumer subscribes to a group whose first consumer is stable: from its subscribe
  until both hold their new assignment (median of :data:`REBALANCES`; heartbeats every :data:`HEARTBEAT_MS`).

Both sides :data:`~bench.peer_targets.REPETITIONS` times, the order swapped every time; each figure is the median
over the runs, its spread beside it, and the summary gives what SASL_SSL costs on each side (its figure over
PLAINTEXT's). Command: ``python -m bench.run security_cost`` (part of ``make bench``).
"""

from __future__ import annotations

import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from bench.peer_targets import (
    GROUPCOORD,
    KAFKA,
    RATIO_MEANING,
    REPETITIONS,
    alternated,
    load_average,
    medians,
    side_by_side,
)
from bench.results_io import Check, write_result
from bench.secured_broker import start_secured_broker
from bench.secured_certificates import Certificates, make_certificates
from groupcoord.admin.users import add_user
from groupcoord.config import resolve_config
from groupcoord.host.background import BackgroundCoordinator
from groupcoord.state_root import StateRoot
from groupcoord.topics import TopicCatalog

USER, PASSWORD, MECHANISM = "bench", "bench-password-1", "SCRAM-SHA-512"
TOPIC, TOPIC_PARTITIONS = "commits", 8
COMMITTERS, PARTITIONS, SECONDS = 8, 8, 10.0
REBALANCES = 5
PROTOCOLS = ("PLAINTEXT", "SASL_SSL")
SASL_THROUGHPUT_TARGET = 0.8
"""serve's closed-loop commit rate over SASL_SSL over its rate over PLAINTEXT (TLS and SCRAM cost per connection)."""
FIGURES = ("connect_ms", "offsets_per_s", "commit_p50_ms", "commit_p99_ms", "rebalance_ms")
HEARTBEAT_MS = 100
"""The consumers' heartbeat interval: the first member learns of the rebalance at its next heartbeat, so a long one
(librdkafka's 3 s) would be most of what is measured."""
Conf = dict[str, Any]


def _client_conf(bootstrap: str, protocol: str, certificates: Certificates) -> Conf:
    conf: Conf = {"bootstrap.servers": bootstrap, "security.protocol": protocol}
    if protocol == "SASL_SSL":
        conf.update({"sasl.mechanism": MECHANISM, "sasl.username": USER, "sasl.password": PASSWORD,
                     "ssl.ca.location": str(certificates.ca)})
    return conf


def connect_ms(conf: Conf) -> float:
    """Median of 20 new clients' first metadata."""
    times = []
    for _ in range(20):
        started = time.perf_counter()
        AdminClient(conf).list_topics(TOPIC, timeout=10)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def commits(conf: Conf, label: str) -> tuple[float, float, float]:
    """Offsets per second, the median and the p99 commit latency (ms) of the closed loop."""
    latencies: list[float] = []
    counts = [0] * COMMITTERS
    deadline = time.monotonic() + SECONDS

    def committer(index: int) -> None:
        consumer = Consumer({**conf, "group.id": f"bench-{label}-{index}", "enable.auto.commit": False})
        offset = 0
        try:
            while time.monotonic() < deadline:
                offset += 1
                started = time.perf_counter()
                consumer.commit(offsets=[TopicPartition(TOPIC, p, offset) for p in range(PARTITIONS)],
                                asynchronous=False)
                latencies.append((time.perf_counter() - started) * 1000)
                counts[index] += PARTITIONS
        finally:
            consumer.close()

    started = time.monotonic()
    threads = [threading.Thread(target=committer, args=(i,)) for i in range(COMMITTERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    ordered = sorted(latencies)
    return (sum(counts) / (time.monotonic() - started), statistics.median(ordered),
            ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))])


def _wait_assigned(consumers: list[Consumer], assigned: dict[int, int], wanted: int, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while sum(assigned.values()) != wanted or len(assigned) != len(consumers):
        if time.monotonic() > deadline:
            raise TimeoutError(f"no assignment of {wanted} partitions to {len(consumers)} consumers")
        for consumer in consumers:
            consumer.poll(0.01)


def _recorder(assigned: dict[int, int], index: int) -> Callable[[Consumer, list[TopicPartition]], None]:
    def on_assign(_: Consumer, partitions: list[TopicPartition]) -> None:
        assigned[index] = len(partitions)
    return on_assign


def rebalance_ms(conf: Conf, label: str) -> float:
    """Median time for a second consumer's join to be assigned to both members."""
    times = []
    for round_ in range(REBALANCES):
        group = f"bench-rebalance-{label}-{round_}"
        assigned: dict[int, int] = {}

        first = Consumer({**conf, "group.id": group, "partition.assignment.strategy": "range",
                          "session.timeout.ms": 10000, "heartbeat.interval.ms": HEARTBEAT_MS})
        first.subscribe([TOPIC], on_assign=_recorder(assigned, 0))
        _wait_assigned([first], assigned, TOPIC_PARTITIONS)
        second = Consumer({**conf, "group.id": group, "partition.assignment.strategy": "range",
                           "session.timeout.ms": 10000, "heartbeat.interval.ms": HEARTBEAT_MS})
        assigned.clear()
        started = time.perf_counter()
        second.subscribe([TOPIC], on_assign=_recorder(assigned, 1))
        _wait_assigned([first, second], assigned, TOPIC_PARTITIONS)
        times.append((time.perf_counter() - started) * 1000)
        second.close()
        first.close()
    return statistics.median(times)


def _warm_up(conf: Conf, label: str, timeout_s: float = 120) -> None:
    """Commit until the coordinator accepts (Kafka creates ``__consumer_offsets`` on the first commit)."""
    consumer = Consumer({**conf, "group.id": f"bench-{label}-warm-up", "enable.auto.commit": False})
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            try:
                consumer.commit(offsets=[TopicPartition(TOPIC, 0, 1)], asynchronous=False)
                return
            except KafkaException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
    finally:
        consumer.close()


def measure(bootstrap: str, protocol: str, certificates: Certificates, label: str) -> dict[str, float]:
    """Every figure of one target."""
    conf = _client_conf(bootstrap, protocol, certificates)
    _warm_up(conf, label)
    offsets, p50, p99 = commits(conf, label)
    return {"connect_ms": round(connect_ms(conf), 2), "offsets_per_s": round(offsets),
            "commit_p50_ms": round(p50, 2), "commit_p99_ms": round(p99, 2),
            "rebalance_ms": round(rebalance_ms(conf, label), 1)}


@contextmanager
def serve(folder: Path, protocol: str, certificates: Certificates) -> Iterator[str]:
    """``serve`` of a fresh root with topic :data:`TOPIC` and the user, with ``protocol``."""
    root = StateRoot.open(folder / f"root-{protocol}", create=True)
    TopicCatalog(root).create(TOPIC, TOPIC_PARTITIONS)
    add_user(root, resolve_config(), USER, MECHANISM, PASSWORD, 4096)
    flags = {"listener.security.protocol": protocol, "sasl.enabled.mechanisms": MECHANISM,
             "ssl.keystore.location": str(certificates.server_cert),
             "ssl.key.location": str(certificates.server_key), "log.fsync": "false",
             "group.initial.rebalance.delay.ms": 0}
    with BackgroundCoordinator(root, resolve_config(flags=flags), listen="127.0.0.1:0") as coordinator:
        assert coordinator.address is not None
        yield coordinator.address


def _measure_serve(folder: Path, certificates: Certificates, run: int) -> list[dict[str, Any]]:
    rows = []
    for protocol in PROTOCOLS:
        with serve(folder / f"serve-{run}", protocol, certificates) as address:
            rows.append({"side": GROUPCOORD, "protocol": protocol,
                         **measure(address, protocol, certificates, f"serve-{protocol}-{run}")})
    return rows


def _measure_kafka(folder: Path, certificates: Certificates, run: int) -> list[dict[str, Any]]:
    secured = start_secured_broker(folder / f"broker-{run}", certificates, {USER: PASSWORD},
                                   properties={"group.initial.rebalance.delay.ms": "0"})
    try:
        secured.broker.create_topic(TOPIC, TOPIC_PARTITIONS)
        bootstraps = {"PLAINTEXT": secured.broker.bootstrap, "SASL_SSL": secured.sasl_ssl}
        return [{"side": KAFKA, "protocol": protocol,
                 **measure(bootstraps[protocol], protocol, certificates, f"k-{protocol}-{run}")}
                for protocol in PROTOCOLS]
    finally:
        secured.broker.stop()


def _costs(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Each side's SASL_SSL figure over its PLAINTEXT figure, paired within each run (both protocols measured back to
    back in the same minutes), the median over the runs (above 1: more time, or more offsets per second)."""
    by = {(row["side"], row["run"], row["protocol"]): row for row in rows}
    costs = {}
    for side in (KAFKA, GROUPCOORD):
        runs = sorted({run for s, run, _ in by if s == side})
        for figure in FIGURES:
            ratios = [by[(side, run, "SASL_SSL")][figure] / by[(side, run, "PLAINTEXT")][figure] for run in runs
                      if (side, run, "SASL_SSL") in by and by.get((side, run, "PLAINTEXT"), {}).get(figure)]
            if ratios:
                costs[f"{side} SASL_SSL/PLAINTEXT {figure}"] = round(statistics.median(ratios), 3)
    return costs


def main(full: bool = False, repetitions: int = REPETITIONS) -> None:
    """Both sides, both protocols, alternated ``repetitions`` times; writes ``bench/results/security_cost.json``."""
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="security-cost-") as tmp:
        folder = Path(tmp)
        certificates = make_certificates(folder / "certs")
        for run, side in alternated(repetitions):
            measured = _measure_serve(folder, certificates, run) if side == GROUPCOORD else \
                _measure_kafka(folder, certificates, run)
            for row in measured:
                row["run"], row["load_avg_1m"] = run, load_average()
                print(row, flush=True)
            rows += measured
    merged = medians(rows, ("protocol",), FIGURES)
    table = side_by_side(merged, ("protocol",), FIGURES,
                         extras=("repetitions", *(f"{f}_spread" for f in FIGURES), "load_avg_1m"))
    costs = _costs(merged)
    checks = [Check("security_cost", f"commits_acknowledged[{row['side']}, {row['protocol']}]", "correctness",
                    all(r["offsets_per_s"] > 0 for r in rows
                        if (r["side"], r["protocol"]) == (row["side"], row["protocol"])), "==", True)
              for row in merged]
    checks.append(Check("security_cost", "sasl_ssl_over_plaintext_offsets_per_s[groupcoord]", "speed",
                        costs.get(f"{GROUPCOORD} SASL_SSL/PLAINTEXT offsets_per_s"), ">=", SASL_THROUGHPUT_TARGET))
    write_result(
        "security_cost",
        title="What authentication costs: PLAINTEXT and SASL_SSL (SCRAM-SHA-512) on serve and on Kafka 4.4.0",
        rows=table,
        checks=checks,
        summary={"ratio": RATIO_MEANING, "sasl_ssl_over_plaintext": costs,
                 "committers": COMMITTERS, "partitions_per_commit": PARTITIONS, "seconds": SECONDS},
        notes=(f"librdkafka clients on both sides. connect_ms: a new client's first metadata, median of 20. "
               f"offsets_per_s, commit_p50_ms, commit_p99_ms: {COMMITTERS} committers of {PARTITIONS} offsets per "
               f"synchronous OffsetCommit, closed loop, {SECONDS:.0f} s. rebalance_ms: a second consumer's "
               f"subscribe until both hold their assignment, median of {REBALANCES} (heartbeats every "
               f"{HEARTBEAT_MS} ms). serve: the background coordinator in the benchmark's process, fsync off (as "
               "Kafka's default), one per protocol; Kafka: one broker with both listeners. Sides alternated "
               f"{repetitions} times; medians over the runs with their spread. The summary's "
               "sasl_ssl_over_plaintext is each side's SASL_SSL figure over its PLAINTEXT one. Target (ours): "
               f"authentication is paid per connection, so serve's commit rate over SASL_SSL is at least "
               f"{SASL_THROUGHPUT_TARGET}x its PLAINTEXT rate; every target must acknowledge commits."),
    )


if __name__ == "__main__":
    main()
