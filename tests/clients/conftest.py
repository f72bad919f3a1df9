"""The target of the client suite, and each client.

The target is ``groupcoord serve --no-spark`` over a state root holding the scenarios' topic with records (the
group settings of the parity suite: Kafka's defaults, no initial rebalance delay; consumer groups heartbeat every
second). With
``GROUPCOORD_CLIENTS_ORACLE=kafka`` it is a Kafka 4.4.0 dev broker with the same topic and records instead, to check
what the scenarios expect against Kafka's own coordinator.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from groupcoord.devbroker import TEST_JVM_OPTIONS, KafkaBroker, Record
from groupcoord.devbroker.java_build import java_command
from groupcoord.state_root import StateRoot
from groupcoord.topics import ProducerRecord, TopicCatalog, TopicLog
from tests.clients.line_client import LineClient, LineProcess
from tests.clients.scenarios import (
    HEARTBEAT_MS,
    PARTITIONS,
    RECORDS_PER_PARTITION,
    SESSION_MS,
    STATIC,
    TOPIC,
    Client,
)
from tests.host.conftest import ServeProcess
from tests.parity.targets import GROUP_SETTINGS

REPO = Path(__file__).resolve().parents[2]
NODE_DIR = Path(__file__).resolve().parent / "node"
JAVA_SOURCE = Path(__file__).resolve().parent / "java" / "GroupClient.java"
JAVA_BUILD = REPO / "var" / "clients-java"
ORACLE_ENV = "GROUPCOORD_CLIENTS_ORACLE"
KAFKAJS_LACKS = {STATIC: "the consumer has no group.instance.id option (kafkajs 2.2.4 ignores groupInstanceId)"}
"""What kafkajs does not offer (see :data:`tests.clients.scenarios.CAPABILITIES`)."""


CONSUMER_HEARTBEAT_MS = "1000"
"""The heartbeat interval of consumer groups (KIP-848) on both targets (Kafka's default is 5 s): every hand-over of
``group.protocol=consumer`` members takes a few heartbeats. The broker also needs its floor lowered to allow it."""
SERVE_SETTINGS = {**GROUP_SETTINGS, "group.consumer.heartbeat.interval.ms": CONSUMER_HEARTBEAT_MS}
BROKER_SETTINGS = {**SERVE_SETTINGS, "group.consumer.min.heartbeat.interval.ms": CONSUMER_HEARTBEAT_MS,
                   "group.consumer.regex.refresh.interval.ms": "10000"}
"""The broker's settings: its floor of the heartbeat interval lowered to allow it, and its regex refresh at its
least (10 s; 10 min by default), so that a new topic matches within a scenario's wait."""


def _records() -> list[tuple[int, bytes]]:
    return [(p, f"record-{p}-{i}".encode()) for p in range(PARTITIONS) for i in range(RECORDS_PER_PARTITION)]


def scenario_root(root: Path) -> Path:
    """A new state root at ``root`` holding :data:`TOPIC` with :data:`RECORDS_PER_PARTITION` records a partition."""
    state_root = StateRoot.open(root, create=True)
    catalog = TopicCatalog(state_root)
    catalog.create(TOPIC, PARTITIONS)
    TopicLog(state_root, TOPIC, catalog=catalog).produce(ProducerRecord(value, partition=p) for p, value in _records())
    return root


def serve_settings() -> list[str]:
    """:data:`SERVE_SETTINGS` as ``serve`` arguments."""
    return [arg for key, value in SERVE_SETTINGS.items() for arg in ("--conf", f"{key}={value}")]


def broker_records() -> list[Record]:
    """The records of :data:`TOPIC`, for a broker."""
    return [Record(value, partition=p) for p, value in _records()]


@pytest.fixture(scope="package")
def bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``HOST:PORT`` of the target, which holds :data:`TOPIC` with :data:`RECORDS_PER_PARTITION` records in each
    partition."""
    workdir = tmp_path_factory.mktemp("clients")
    if os.environ.get(ORACLE_ENV) == "kafka":
        with KafkaBroker.start(workdir / "kafka", properties=BROKER_SETTINGS, jvm_options=TEST_JVM_OPTIONS) as broker:
            broker.create_topic(TOPIC, PARTITIONS)
            broker.produce(TOPIC, broker_records())
            yield broker.bootstrap
        return
    root = scenario_root(workdir / "root")
    process = ServeProcess(root, *serve_settings(), log_path=workdir / "serve.log")
    try:
        address = process.wait_ready()
        yield f"{address.host}:{address.port}"
    finally:
        try:
            process.terminate()
        finally:
            process.close()


def node_client(bootstrap: str, log_path: Path) -> LineClient:
    """kafkajs in a node process (``tests/clients/node``, installed by ``make install``)."""
    if not (NODE_DIR / "node_modules" / "kafkajs").is_dir():
        pytest.fail("kafkajs is not installed in tests/clients/node: run `make install`")
    command = ["node", "group_client.js", bootstrap, TOPIC, str(PARTITIONS), str(SESSION_MS), str(HEARTBEAT_MS)]
    return LineClient(LineProcess(command, log_path=log_path, cwd=NODE_DIR), lacks=KAFKAJS_LACKS)


def java_client(bootstrap: str, log_path: Path, *, group_protocol: str = "classic") -> LineClient:
    """Kafka's Java consumer and admin client (``tests/clients/java/GroupClient.java``, compiled at first use), its
    consumers on ``group_protocol`` (``classic``, or ``consumer``: KIP-848)."""
    command = java_command(JAVA_SOURCE, JAVA_BUILD, bootstrap, TOPIC, str(PARTITIONS), str(SESSION_MS),
                           str(HEARTBEAT_MS), group_protocol,
                           jvm_options=(*TEST_JVM_OPTIONS, "-Dorg.apache.logging.log4j.level=WARN"))
    return LineClient(LineProcess(command, log_path=log_path), lacks={}, fenced_error=JAVA_FENCED)


JAVA_FENCED = r"FencedInstanceId|CommitFailedException"
"""A fenced Java consumer's commit: FENCED_INSTANCE_ID from the coordinator, or CommitFailedException once the
consumer's heartbeat (every ``HEARTBEAT_MS``) met FENCED_INSTANCE_ID first and reset its generation: a commit after
that is refused by the consumer itself, "not part of an active group", without asking the coordinator; a commit in
flight meanwhile gets FENCED_INSTANCE_ID for a generation that is gone, which the consumer reports as a plain
CommitFailedException (``ConsumerCoordinator``'s OffsetCommit request and response). Kafka 4.4.0's coordinator gives
the same: which one the test sees depends only on how soon its commit follows the fencing."""


ClientFactory = Callable[[str, Path], Client]
