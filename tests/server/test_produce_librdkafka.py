"""librdkafka (confluent-kafka) against ``groupcoord serve``: it produces and consumes every field, and a consumer that
holds partitions with nothing to read stays idle.

Before Produce was served, librdkafka never fetched and retried the missing API without backoff, one core at 100 % per
consumer (issue 21). The consumer runs in a process of its own, so its CPU time (every librdkafka thread) is measured
alone, over an idle window after it has read everything.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from groupcoord.server.api import BrokerAddress
from groupcoord.state_root import StateRoot
from groupcoord.topics import TopicCatalog
from tests.host.conftest import ServeProcess

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TOPIC = "events"
RECORDS = 300
IDLE_SECONDS = 5.0
IDLE_CPU_LIMIT = 0.05
"""Share of one core the idle consumer may use (it used a whole core before Produce was served)."""

_CONSUMER = r"""
import json, resource, sys, time
from confluent_kafka import Consumer
bootstrap, topic, expected, idle = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "rdkafka-idle", "auto.offset.reset": "earliest",
                     "enable.auto.commit": True, "auto.commit.interval.ms": 500})
consumer.subscribe([topic])
got = []
deadline = time.monotonic() + 60
while len(got) < expected and time.monotonic() < deadline:
    message = consumer.poll(0.5)
    if message is None:
        continue
    if message.error():
        raise SystemExit(f"consumer error: {message.error()}")
    kind, stamp = message.timestamp()
    got.append([message.partition(), message.offset(), (message.key() or b"").hex(), message.value().hex(),
                [[k, (v or b"").hex()] for k, v in (message.headers() or [])], kind, stamp])
assignment = [p.partition for p in consumer.assignment()]
def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
started, wall = cpu(), time.monotonic()
while time.monotonic() - wall < idle:  # holds its partitions, nothing new to read
    message = consumer.poll(0.5)
    if message is not None and not message.error():
        got.append("unexpected")
idle_cpu = (cpu() - started) / (time.monotonic() - wall)
consumer.close()
print(json.dumps({"records": got, "assignment": sorted(assignment), "idle_cpu": idle_cpu}))
"""


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[ServeProcess, BrokerAddress]]:
    root = tmp_path / "root"
    TopicCatalog(StateRoot.open(root, create=True)).create(TOPIC, 3)
    process = ServeProcess(root, log_path=tmp_path / "serve.log")
    try:
        yield process, process.wait_ready()
    finally:
        process.close()


def test_librdkafka_produces_and_consumes_every_field_and_an_idle_consumer_does_not_spin(
    served: tuple[ServeProcess, BrokerAddress],
) -> None:
    _, address = served
    bootstrap = f"{address.host}:{address.port}"
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "compression.type": "lz4",
                         "linger.ms": 5})
    failures: list[str] = []
    for n in range(RECORDS):
        producer.produce(TOPIC, value=b"value-%d" % n, key=b"key-%d" % n, headers=[("n", str(n).encode())],
                         timestamp=1_767_225_600_000 + n,
                         on_delivery=lambda err, _msg: failures.append(str(err)) if err else None)
        producer.poll(0)
    assert producer.flush(30) == 0 and failures == []

    consumer = subprocess.run([sys.executable, "-c", _CONSUMER, bootstrap, TOPIC, str(RECORDS), str(IDLE_SECONDS)],
                              capture_output=True, text=True, timeout=120)
    assert consumer.returncode == 0, consumer.stderr[-3000:]
    result = json.loads(consumer.stdout.strip().splitlines()[-1])
    records = result["records"]
    assert "unexpected" not in records and len(records) == RECORDS
    assert result["assignment"] == [0, 1, 2]
    by_value = {bytes.fromhex(r[3]): r for r in records}
    for n in range(RECORDS):
        _, _, key, _, headers, kind, stamp = by_value[b"value-%d" % n]
        assert (bytes.fromhex(key), headers, kind, stamp) == (
            b"key-%d" % n, [["n", str(n).encode().hex()]], 1, 1_767_225_600_000 + n)  # 1: CreateTime
    for partition in range(3):  # each partition read in offset order, from 0, without gaps
        offsets = [r[1] for r in records if r[0] == partition]
        assert offsets == list(range(len(offsets)))
    print(f"idle librdkafka consumer: {result['idle_cpu']:.4f} of a core over {IDLE_SECONDS:g} s")
    assert result["idle_cpu"] < IDLE_CPU_LIMIT
