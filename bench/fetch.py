"""Fetch: consumers reading a whole topic from ``serve`` and from Kafka's broker, the same client and the same data.

Each side starts fresh (:data:`~bench.peer_targets.REPETITIONS` times, alternated with the other), gets a topic of
:data:`PARTITIONS` partitions filled with :data:`RECORDS` records of :data:`VALUE_BYTES`-byte values by the same
librdkafka producer (``acks=all``, ``linger.ms=5``), and then each client reads the whole topic from the beginning,
without a group (every partition assigned, from the earliest offset), at its defaults:

- ``kafka-python`` (``KafkaConsumer``, pure Python);
- ``librdkafka`` (confluent-kafka's ``Consumer``);
- ``java`` (Kafka 4.4.0's ``KafkaConsumer``, ``bench/java/FetchTiming.java``, a JVM of its own).

``records_per_s`` runs from the first poll to the last record. Issue 29's goal: serve at least 0.5x the broker with
each client (floor 0.3x). Then the idle cost: :data:`IDLE_CONSUMERS` librdkafka consumers caught up at the end of
every partition long-poll for :data:`IDLE_S` seconds with nothing new, and the server's CPU over that window is its
``idle_cpu_percent`` (of one core); issue 29: an idle consumer costs serve no more than it costs the broker.
Command: ``python -m bench.run fetch``.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_END, Consumer, Producer, TopicPartition
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaPythonPartition

from bench.peer_targets import (
    GROUPCOORD,
    KAFKA,
    RATIO_MEANING,
    REPETITIONS,
    Endpoint,
    alternated,
    coordinator_with_topic,
    load_average,
    side_by_side,
)
from bench.peer_targets import medians as merged_runs
from bench.results_io import Check, write_result
from groupcoord.devbroker.java_build import java_command

SOURCE = Path(__file__).resolve().parent / "java" / "FetchTiming.java"
BUILD = Path(__file__).resolve().parents[1] / "var" / "bench-java"
TOPIC = "fetch"
PARTITIONS = 6
RECORDS = 300_000
VALUE_BYTES = 100
TIMEOUT_S = 300.0
FIGURES = ("records_per_s", "idle_cpu_percent")
GOAL, FLOOR = 0.5, 0.3
"""Issue 29: serve's rate over the broker's, per client (a goal; below the floor the issue fails)."""
IDLE_CONSUMERS = 3
IDLE_S = 30.0
IDLE_SETTLE_S = 5.0
"""Seconds the idle consumers run before the CPU window opens (connections, metadata, the first long-polls)."""


def fill(endpoint: Endpoint, records: int = RECORDS) -> None:
    """Produce ``records`` keyed records round the partitions; wait until every one is acknowledged."""
    producer = Producer({"bootstrap.servers": f"{endpoint.host}:{endpoint.port}", "acks": "all", "linger.ms": 5,
                         "queue.buffering.max.messages": 500_000})
    failed: list[str] = []

    def report(error: Any, _message: Any) -> None:
        if error is not None:
            failed.append(str(error))

    value = b"v" * VALUE_BYTES
    for index in range(records):
        while True:
            try:
                producer.produce(TOPIC, value, key=f"k{index:08d}".encode(), partition=index % PARTITIONS,
                                 on_delivery=report)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    if producer.flush(TIMEOUT_S) or failed:
        raise RuntimeError(f"{endpoint.side}: producing the topic failed ({len(failed)} errors: {failed[:3]})")


def read_kafka_python(endpoint: Endpoint, records: int) -> float:
    """Seconds kafka-python's consumer takes to read every record."""
    consumer = KafkaConsumer(bootstrap_servers=f"{endpoint.host}:{endpoint.port}", auto_offset_reset="earliest",
                             enable_auto_commit=False)
    try:
        partitions = [KafkaPythonPartition(TOPIC, p) for p in range(PARTITIONS)]
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        return _timed(lambda: sum(len(batch) for batch in consumer.poll(timeout_ms=500).values()), records)
    finally:
        consumer.close()


def read_librdkafka(endpoint: Endpoint, records: int) -> float:
    """Seconds confluent-kafka's consumer takes to read every record."""
    consumer = Consumer({"bootstrap.servers": f"{endpoint.host}:{endpoint.port}", "group.id": "fetch-bench",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])

        def poll() -> int:
            messages = consumer.consume(10_000, timeout=0.5)
            return sum(1 for message in messages if message.error() is None)

        return _timed(poll, records)
    finally:
        consumer.close()


def read_java(endpoint: Endpoint, records: int) -> float:
    """Seconds Kafka's Java consumer takes to read every record (its own measure, inside its JVM)."""
    command = java_command(SOURCE, BUILD, f"{endpoint.host}:{endpoint.port}", TOPIC, str(PARTITIONS), str(records))
    done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S + 60)
    if done.returncode != 0:
        raise RuntimeError(f"FetchTiming exited with {done.returncode}:\n{done.stderr[-2000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if result["records"] != records:
        raise RuntimeError(f"{endpoint.side}: the Java consumer read {result['records']} of {records} records")
    return float(result["seconds"])


def _timed(poll: Callable[[], int], records: int) -> float:
    started = time.monotonic()
    seen = 0
    while seen < records:
        if time.monotonic() - started > TIMEOUT_S:
            raise RuntimeError(f"read {seen} of {records} records in {TIMEOUT_S:.0f} s")
        seen += poll()
    if seen != records:
        raise RuntimeError(f"read {seen} records, {records} were produced")
    return time.monotonic() - started


def idle_cpu_percent(endpoint: Endpoint) -> float:
    """The server's CPU (percent of one core) while :data:`IDLE_CONSUMERS` consumers, caught up at the end of every
    partition, long-poll for :data:`IDLE_S` seconds with nothing new to read (librdkafka's defaults:
    ``fetch.wait.max.ms`` 500)."""
    consumers = [Consumer({"bootstrap.servers": f"{endpoint.host}:{endpoint.port}", "group.id": f"idle-{i}",
                           "enable.auto.commit": False}) for i in range(IDLE_CONSUMERS)]
    try:
        for consumer in consumers:
            consumer.assign([TopicPartition(TOPIC, p, OFFSET_END) for p in range(PARTITIONS)])
        _poll_for(consumers, IDLE_SETTLE_S)
        cpu, started = endpoint.cpu_seconds(), time.monotonic()
        _poll_for(consumers, IDLE_S)
        return 100 * (endpoint.cpu_seconds() - cpu) / (time.monotonic() - started)
    finally:
        for consumer in consumers:
            consumer.close()


def _poll_for(consumers: list[Consumer], seconds: float) -> None:
    """Poll each consumer in turn for ``seconds``; nothing is expected (a record would mean the topic moved)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for consumer in consumers:
            for message in consumer.consume(100, timeout=0.1):
                if message.error() is None:
                    raise RuntimeError(f"an idle consumer read a record at offset {message.offset()}")


CLIENTS: dict[str, Callable[[Endpoint, int], float]] = {
    "kafka-python": read_kafka_python, "librdkafka": read_librdkafka, "java": read_java}


def measure_side(endpoint: Endpoint, records: int) -> list[dict[str, Any]]:
    """Fill the topic, then let each client read it all."""
    fill(endpoint, records)
    rows = []
    for client, read in CLIENTS.items():
        seconds = read(endpoint, records)
        rows.append({"side": endpoint.side, "client": client, "records": records, "seconds": round(seconds, 3),
                     "records_per_s": round(records / seconds), "load_avg_1m": load_average()})
        print(rows[-1], flush=True)
    rows.append({"side": endpoint.side, "client": f"{IDLE_CONSUMERS} idle consumers", "records": 0,
                 "idle_cpu_percent": round(idle_cpu_percent(endpoint), 2), "load_avg_1m": load_average()})
    print(rows[-1], flush=True)
    return rows


def main(full: bool = False, runs: int = REPETITIONS, records: int = RECORDS) -> None:
    """Both sides alternated ``runs`` times; writes ``bench/results/fetch.json``."""

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="fetch-") as work:
        for run, side in alternated(runs):
            where = Path(work) / f"{side}-{run}"
            with coordinator_with_topic(side, where, {}, TOPIC, PARTITIONS) as endpoint:
                rows += measure_side(endpoint, records)
    key = ("client",)
    table = side_by_side(merged_runs(rows, key, FIGURES), key, FIGURES,
                         extras=("repetitions", "records_per_s_spread", "idle_cpu_percent_spread", "load_avg_1m"))
    reads = [row for row in table if row["records_per_s_ratio"] is not None]
    checks = [Check("fetch", f"records_per_s_ratio[{row['client']}]", "speed", row["records_per_s_ratio"], ">=", GOAL)
              for row in reads]
    checks += [Check("fetch", f"records_per_s_ratio_floor[{row['client']}]", "speed",
                     row["records_per_s_ratio"], ">=", FLOOR) for row in reads]
    checks += [Check("fetch", f"idle_cpu_percent_ratio[{row['client']}]", "speed", row["idle_cpu_percent_ratio"],
                     ">=", 1.0) for row in table if row["idle_cpu_percent_ratio"] is not None]
    write_result(
        "fetch",
        title="Fetch: the same consumer reading a whole topic from serve and from Kafka 4.4.0's broker",
        rows=table,
        summary={"ratio": RATIO_MEANING, "records": records, "partitions": PARTITIONS, "value_bytes": VALUE_BYTES,
                 "goal": f">= {GOAL}x the broker per client", "floor": f">= {FLOOR}x"},
        notes=(f"{records:,} records of {VALUE_BYTES} bytes (16-byte keys) in {PARTITIONS} partitions, produced by "
               "librdkafka (acks=all, linger.ms=5) into each side started fresh; then each client reads them all "
               "from the earliest offset with every partition assigned (no group), at its defaults. Both sides "
               f"{runs} times, alternated (Kafka first in the first run); medians with their spread. serve keeps "
               "each record in its topic's Delta table and builds record batches per Fetch; the broker returns the "
               f"stored batches. Idle: after the reads, {IDLE_CONSUMERS} librdkafka consumers (defaults: long-polls of "
               f"up to 500 ms) assigned every partition at its end poll for {IDLE_SETTLE_S:.0f} s, then for "
               f"{IDLE_S:.0f} s in which the server's process CPU (user + system, /proc) is measured, as percent of "
               "one core; its ratio is the broker's over serve's (at least 1: serve costs no more). Sides: "
               + ", ".join((KAFKA, GROUPCOORD)) + "."),
        checks=checks,
    )
