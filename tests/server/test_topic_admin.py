"""Kafka's own command-line tools against ``serve`` and against Kafka 4.4.0: ``kafka-topics`` (TopicCommand) creates,
describes, grows, lists and (on Kafka only) deletes topics, and ``kafka-get-offsets`` (GetOffsetShell) reads their
offsets, the tiered-storage timestamps (ListOffsets v8+) included. And DeleteGroups v3, which kafka-python cannot
send, answered the same by both.

The tools run in one JVM (``tests/server/java/KafkaTools.java``) for both targets: the coordinator of a state root
(the host ``serve`` runs) and the session's broker. What differs is what docs/compatibility.md keeps: groupcoord
never deletes a topic (TOPIC_DELETION_DISABLED, as a broker with ``delete.topic.enable=false``) and keeps no
per-topic configuration (INVALID_CONFIG for a value it does not have); shrinking is refused by both, with the
catalog's own message here.
"""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer

from groupcoord.devbroker import TEST_JVM_OPTIONS, KafkaBroker
from groupcoord.devbroker.java_build import java_command
from groupcoord.host.background import BackgroundCoordinator
from groupcoord.protocol.errors import Errors
from groupcoord.protocol.schemas import decode_response, encode_request
from groupcoord.state_root import StateRoot
from tests.cli.conftest import fast_config

pytestmark = [pytest.mark.integration, pytest.mark.kafka, pytest.mark.jvm, pytest.mark.slow]

SOURCE = Path(__file__).resolve().parent / "java" / "KafkaTools.java"
LOG4J = SOURCE.with_name("kafka-tools-log4j2.properties")
BUILD = Path(__file__).resolve().parents[2] / "var" / "server-java"
TOOL_TIMEOUT_S = 60.0
DELETE_GROUPS = 42


class KafkaTools:
    """The tools' JVM: :meth:`run` one command, get its exit status and output."""

    def __init__(self, log_path: Path) -> None:
        command = java_command(SOURCE, BUILD, jvm_options=(*TEST_JVM_OPTIONS, f"-Dlog4j2.configurationFile={LOG4J}"))
        self._log = log_path.open("w")
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
                                        text=True)

    def run(self, tool: str, *args: str) -> dict[str, Any]:
        """Run ``tool`` (``TopicCommand`` or ``GetOffsetShell``) with ``args``; its status, stdout and stderr."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({"tool": tool, "args": list(args)}) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        assert line, "the tools' JVM died"
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        """End the JVM."""
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(30)
        self._log.close()


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaTools]:
    """One JVM of Kafka's tools for the module."""
    running = KafkaTools(tmp_path_factory.mktemp("kafka-tools") / "tools.log")
    yield running
    running.close()


@pytest.fixture(scope="module")
def groupcoord(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``HOST:PORT`` of the coordinator of a new state root (the host that ``serve`` runs)."""
    root = StateRoot.open(tmp_path_factory.mktemp("topic-admin") / "root", create=True)
    with BackgroundCoordinator(root, fast_config(), listen="127.0.0.1:0") as coordinator:
        assert coordinator.address is not None
        yield coordinator.address


@pytest.fixture(params=["groupcoord", "kafka"])
def target(request: pytest.FixtureRequest) -> str:
    """The bootstrap address of each target in turn."""
    if request.param == "kafka":
        broker: KafkaBroker = request.getfixturevalue("kafka_broker")
        return broker.bootstrap
    address: str = request.getfixturevalue("groupcoord")
    return address


def _topics(tools: KafkaTools, bootstrap: str, *args: str) -> dict[str, Any]:
    return tools.run("TopicCommand", "--bootstrap-server", bootstrap, *args)


def _offsets(tools: KafkaTools, bootstrap: str, topic: str, time: str) -> list[str]:
    answer = tools.run("GetOffsetShell", "--bootstrap-server", bootstrap, "--topic", topic, "--time", time)
    assert answer["status"] == 0, answer
    return sorted(line for line in answer["out"].splitlines() if line)


def test_kafka_topics_creates_describes_grows_and_lists(tools: KafkaTools, target: str, request: Any) -> None:
    topic = f"tools-{request.node.callspec.id}"
    created = _topics(tools, target, "--create", "--topic", topic, "--partitions", "3",
                      "--config", "cleanup.policy=delete")
    assert (created["status"], created["out"].strip()) == (0, f"Created topic {topic}."), created
    again = _topics(tools, target, "--create", "--topic", topic, "--partitions", "3")
    assert again["status"] == 1 and f"TopicExistsException: Topic '{topic}' already exists." in again["err"]
    replicated = _topics(tools, target, "--create", "--topic", f"{topic}-rf3", "--replication-factor", "3")
    assert replicated["status"] == 1 and (
        "InvalidReplicationFactorException: Unable to replicate the partition 3 time(s): The target replication "
        "factor of 3 cannot be reached because only 1 broker(s) are registered or some brokers have all their log "
        "directories cordoned.") in replicated["err"], replicated

    grown = _topics(tools, target, "--alter", "--topic", topic, "--partitions", "5")
    assert grown["status"] == 0, grown
    shrunk = _topics(tools, target, "--alter", "--topic", topic, "--partitions", "2")
    assert shrunk["status"] == 1 and "InvalidPartitionsException" in shrunk["err"], shrunk
    described = _topics(tools, target, "--describe", "--topic", topic)
    assert described["status"] == 0, described
    header, *partitions = described["out"].strip().splitlines()
    assert f"Topic: {topic}\tTopicId: " in header and "PartitionCount: 5\tReplicationFactor: 1" in header, header
    assert [line.split("\t")[2] for line in partitions] == [f"Partition: {p}" for p in range(5)]
    listed = _topics(tools, target, "--list")
    assert topic in listed["out"].split(), listed


def test_kafka_get_offsets_reads_every_timestamp_kind(tools: KafkaTools, target: str, request: Any) -> None:
    topic = f"offsets-{request.node.callspec.id}"
    assert _topics(tools, target, "--create", "--topic", topic, "--partitions", "2")["status"] == 0
    producer = KafkaProducer(bootstrap_servers=target, acks="all")
    try:
        for n in range(3):
            producer.send(topic, f"r{n}".encode(), partition=0)
        producer.flush(30)
    finally:
        producer.close()
    assert _offsets(tools, target, topic, "-1") == [f"{topic}:0:3", f"{topic}:1:0"]  # latest
    assert _offsets(tools, target, topic, "-2") == [f"{topic}:0:0", f"{topic}:1:0"]  # earliest
    assert _offsets(tools, target, topic, "-4") == [f"{topic}:0:0", f"{topic}:1:0"]  # earliest local (v8)
    assert _offsets(tools, target, topic, "-5") == []  # latest tiered (v9): nothing is tiered, offset -1


def test_what_groupcoord_refuses_and_kafka_does(tools: KafkaTools, target: str, request: Any) -> None:
    topic = f"kept-{request.node.callspec.id}"
    assert _topics(tools, target, "--create", "--topic", topic, "--partitions", "1")["status"] == 0
    configured = _topics(tools, target, "--create", "--topic", f"{topic}-cfg", "--config", "retention.ms=1000")
    deleted = _topics(tools, target, "--delete", "--topic", topic)
    if request.node.callspec.id == "kafka":
        assert configured["status"] == deleted["status"] == 0, (configured, deleted)
        return
    assert configured["status"] == 1 and "InvalidConfigurationException: groupcoord has no per-topic " \
        "configuration: retention.ms=1000 is not supported" in configured["err"], configured
    assert deleted["status"] == 1 and "TopicDeletionDisabledException: Topic deletion is disabled." in \
        deleted["err"], deleted
    assert topic in _topics(tools, target, "--list")["out"].split()


def test_delete_groups_v3_answers_as_kafka(tools: KafkaTools, target: str, request: Any) -> None:
    """DeleteGroups v3 (past kafka-python's schemas: encoded with Kafka's): a group with a member, an emptied group,
    an unknown one and the empty group id, each with Kafka 4.4's code and its null message."""
    busy, emptied = (f"{name}-{request.node.callspec.id}" for name in ("busy", "emptied"))
    topic = f"groups-{request.node.callspec.id}"
    assert _topics(tools, target, "--create", "--topic", topic, "--partitions", "1")["status"] == 0
    members = [KafkaConsumer(bootstrap_servers=target, group_id=group) for group in (busy, emptied)]
    try:
        for member in members:
            # The topic's metadata before the join: kafka-python can lose a metadata-triggered rejoin for good
            # (tests/server/test_kafka_python_rejoin.py), and this target runs without an initial rebalance delay.
            assert member.partitions_for_topic(topic) == {0}
            member.subscribe([topic])
            deadline = time.monotonic() + 60
            while not member.assignment():
                assert time.monotonic() < deadline, "the member did not join in time"
                member.poll(100)
        members[1].close()
        host, port = target.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=30) as connection:
            payload = encode_request(DELETE_GROUPS, 3, 1, "t", {"GroupsNames": [busy, emptied, "nope", ""]})
            connection.sendall(struct.pack(">i", len(payload)) + payload)
            size = struct.unpack(">i", _read(connection, 4))[0]
            _, body = decode_response(DELETE_GROUPS, 3, _read(connection, size))
    finally:
        members[0].close()
    results = sorted((r["GroupId"], r["ErrorCode"], r["ErrorMessage"]) for r in body["Results"])
    assert results == sorted([(busy, Errors.NON_EMPTY_GROUP.code, None), (emptied, 0, None),
                              ("nope", Errors.GROUP_ID_NOT_FOUND.code, None),
                              ("", Errors.GROUP_ID_NOT_FOUND.code, None)])


def _read(connection: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = connection.recv(size - len(data))
        assert chunk, "the connection closed"
        data += chunk
    return data
