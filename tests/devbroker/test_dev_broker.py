"""The dev broker: the Python API against the session's broker, and ``groupcoord dev-broker`` as a process
(readiness line, a restart on its log directory, SIGTERM, and one-line usage errors)."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaConsumer
from kafka.admin import ConfigResource, ConfigResourceType
from kafka.structs import TopicPartition

from groupcoord.cli.main import main
from groupcoord.devbroker import TEST_JVM_OPTIONS, KafkaBroker, Record
from groupcoord.devbroker import broker as broker_module
from tests.narrowing import present

READY = re.compile(r"kafka broker listening on 127\.0\.0\.1:(\d+)\n")


@pytest.mark.kafka
def test_produced_records_are_read_back_at_the_offsets_produce_reports(kafka_broker: KafkaBroker) -> None:
    kafka_broker.create_topic("devbroker-api", partitions=3)
    records = [Record(f"v{i}".encode(), key=f"k{i}".encode(), partition=i % 2) for i in range(10)]
    offsets = kafka_broker.produce("devbroker-api", records)
    assert offsets == {0: range(0, 5), 1: range(0, 5)}

    consumer = KafkaConsumer(bootstrap_servers=kafka_broker.bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False)
    consumer.assign([TopicPartition("devbroker-api", p) for p in range(3)])
    read: dict[tuple[int, int], tuple[bytes | None, bytes | None]] = {}
    deadline = time.monotonic() + 30
    while len(read) < len(records) and time.monotonic() < deadline:
        for batch in consumer.poll(timeout_ms=500).values():
            read.update({(m.partition, m.offset): (m.key, m.value) for m in batch})
    consumer.close()
    assert read == {(r.partition, offsets[present(r.partition)][i // 2]): (r.key, r.value)
                    for i, r in enumerate(records)}


@pytest.mark.kafka
def test_auto_creation_is_off_and_internal_topics_have_one_replica(kafka_broker: KafkaBroker) -> None:
    admin = KafkaAdminClient(bootstrap_servers=kafka_broker.bootstrap)
    try:
        configs = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, "1")], config_filter="all")
    finally:
        admin.close()
    values = {name: entry["value"] for name, entry in configs["broker"]["1"].items()}
    assert values["auto.create.topics.enable"] == "false"
    assert values["offsets.topic.replication.factor"] == "1"
    assert values["group.initial.rebalance.delay.ms"] == "3000"  # Kafka's default, kept: the broker is the oracle


def _start_cli(log_dir: Path) -> tuple[subprocess.Popen[str], str]:
    environment = {**os.environ, "KAFKA_OPTS": "-XX:TieredStopAtLevel=1"}  # no C2: a faster start, as in the fixture
    process = subprocess.Popen([sys.executable, "-m", "groupcoord", "dev-broker", "--listen", "127.0.0.1:0",
                                "--log-dir", str(log_dir)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               text=True, env=environment)
    assert process.stdout is not None
    line = process.stdout.readline()  # blocks until the readiness line, or EOF if the process died
    match = READY.fullmatch(line)
    if match is None:
        process.kill()
        raise AssertionError(f"no readiness line, got {line!r} (exit code {process.wait(30)})")
    return process, f"127.0.0.1:{match.group(1)}"


def _sigterm(process: subprocess.Popen[str]) -> int:
    process.send_signal(signal.SIGTERM)
    return process.wait(60)


@pytest.mark.kafka
@pytest.mark.integration
@pytest.mark.slow
def test_the_cli_serves_until_sigterm_and_a_restart_keeps_the_topics(tmp_path: Path) -> None:
    process, bootstrap = _start_cli(tmp_path / "kafka")
    try:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        admin.create_topics({"kept": {"num_partitions": 2, "replication_factor": 1}}, wait_for_metadata=True)
        admin.close()
    finally:
        assert _sigterm(process) == 0
    assert process.stdout is not None and process.stdout.read() == "", "the readiness line is all of stdout"

    process, bootstrap = _start_cli(tmp_path / "kafka")  # formatted already: no new cluster
    try:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        assert "kept" in admin.list_topics()
        admin.close()
    finally:
        assert _sigterm(process) == 0
    assert "Kafka version" in (tmp_path / "kafka" / "broker.log").read_text()


@pytest.mark.kafka
@pytest.mark.integration
@pytest.mark.slow
def test_a_broker_that_cannot_bind_is_a_one_line_runtime_error_naming_the_cause(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        done = subprocess.run([sys.executable, "-m", "groupcoord", "dev-broker", "--listen", address,
                               "--log-dir", str(tmp_path / "kafka")], capture_output=True, text=True, timeout=300,
                              env={**os.environ, "KAFKA_OPTS": "-XX:TieredStopAtLevel=1"}, check=False)
    assert done.returncode == 1 and done.stdout == ""
    last = done.stderr.splitlines()[-1]  # above it: the broker's own ERROR lines
    assert last.startswith("groupcoord: error: the kafka broker exited with code 1 before it was ready: "), last
    assert f"failed to bind to {address}: Address already in use" in last


@pytest.mark.kafka
@pytest.mark.integration
@pytest.mark.slow
def test_a_free_port_taken_before_the_broker_binds_it_is_replaced(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # The race of a busy machine, made certain: the first "free" port handed out is held by someone else.
    real_free_port = broker_module.free_port
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        handed_out = [taken.getsockname()[1]]
        monkeypatch.setattr(broker_module, "free_port", lambda host: handed_out.pop() if handed_out else
                            real_free_port(host))
        with KafkaBroker.start(tmp_path / "kafka", jvm_options=TEST_JVM_OPTIONS) as broker:
            assert broker.port != taken.getsockname()[1]
            admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
            assert admin.describe_cluster()["brokers"][0]["broker_id"] == 1
            admin.close()
    assert "Address already in use" in (tmp_path / "kafka" / "broker.log").read_text()


@pytest.mark.parametrize("argv, message", [
    (["--listen", "localhost", "--log-dir", "x"], "--listen: expected HOST:PORT, got 'localhost'"),
    (["--listen", "0.0.0.0:9092", "--log-dir", "x"], "--listen: cannot listen on 0.0.0.0"),
    (["--listen", "127.0.0.1:99999", "--log-dir", "x"], "--listen: expected HOST:PORT"),
    (["--log-dir", "x", "--property", "no-equals-sign"], "--property: expected KEY=VALUE, got 'no-equals-sign'"),
    (["--listen", "127.0.0.1:0"], "the following arguments are required: --log-dir"),
])
def test_bad_arguments_are_one_line_usage_errors(argv: list[str], message: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        code = main(["dev-broker", *argv])
        raise SystemExit(code)
    assert exited.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"groupcoord: error: {message}") and err.count("\n") == 1, err
    assert not (tmp_path / "x").exists()
