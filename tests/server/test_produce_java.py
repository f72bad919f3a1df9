"""Kafka's own Java producer (4.x, its defaults: idempotent, acks=all) against ``groupcoord serve``."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from groupcoord.config.jars import kafka_classpath, kafka_jars
from groupcoord.server.api import BrokerAddress
from groupcoord.state_root import StateRoot
from groupcoord.topics import TopicCatalog, TopicLog
from groupcoord.topics.record_columns import datetime_to_millis
from tests.host.conftest import ServeProcess

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TOPIC = "java"
SOURCE = Path(__file__).resolve().parent / "java" / "ProduceCheck.java"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, BrokerAddress]]:
    if not kafka_jars():
        pytest.skip("Kafka's jars are not installed (make install)")
    root = tmp_path / "root"
    TopicCatalog(StateRoot.open(root, create=True)).create(TOPIC, 2)
    process = ServeProcess(root, log_path=tmp_path / "serve.log")
    try:
        yield root, process.wait_ready()
    finally:
        process.close()


def test_the_java_producer_with_its_defaults_writes_every_field(served: tuple[Path, BrokerAddress]) -> None:
    root, address = served
    count, codec = 50, "zstd"
    run = subprocess.run(["java", "-cp", kafka_classpath(), str(SOURCE), f"{address.host}:{address.port}", TOPIC,
                          "1", str(count), codec], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.split("\n")[:count] == [f"1 {n}" for n in range(count)]
    records = TopicLog(StateRoot.open(root), TOPIC).read_records(1, 0, 1000)
    assert [(r.key, r.value, r.headers, r.compression) for r in records] == [
        (b"key-%d" % n, b"java-%d" % n, (("n", str(n).encode()),), codec) for n in range(count)]
    assert [datetime_to_millis(r.timestamp) for r in records] == [1_767_225_600_000 + n for n in range(count)]
