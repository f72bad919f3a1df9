"""The two targets of the parity suite: Apache Kafka 4.4.0's own group coordinator, and ``groupcoord serve``.

Both run with the same group settings, Kafka's defaults except ``group.initial.rebalance.delay.ms=0`` on both sides:
with the default (3000 ms) every scenario's first join would wait three seconds on each side. The session's
``kafka_broker`` keeps that default on purpose (it is the oracle of Kafka's defaults, and a test checks it), and
the setting cannot be changed on a running broker, so this package starts one broker of its own, once, with the
same jars. Both sides get the same topics (:data:`TOPICS`) before the first scenario runs.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka.protocol.admin import DescribeGroupsRequest
from kafka.protocol.metadata import FindCoordinatorRequest

from groupcoord.devbroker import KafkaBroker
from groupcoord.server.api import BrokerAddress
from groupcoord.state_root import StateRoot
from groupcoord.topics import TopicCatalog
from tests.host.conftest import ServeProcess
from tests.parity.targets import BROKER_ONLY_SETTINGS, GROUP_SETTINGS, TOPICS, Target
from tests.server.conftest import RawClient

OFFSETS_TOPIC_PARTITIONS = 50
"""``offsets.topic.num.partitions``: Kafka's default. Each group belongs to one partition of ``__consumer_offsets``."""
_NOT_READY = {14, 15, 16}  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (for text in the Basic Multilingual Plane), which Kafka uses to place a group."""
    value = 0
    for char in text:
        value = (31 * value + ord(char)) & 0xFFFFFFFF
    return value


def probe_groups() -> list[str]:
    """One group name in each partition of ``__consumer_offsets``."""
    names: dict[int, str] = {}
    index = 0
    while len(names) < OFFSETS_TOPIC_PARTITIONS:
        name = f"parity-probe-{index}"
        names.setdefault((java_string_hash(name) & 0x7FFFFFFF) % OFFSETS_TOPIC_PARTITIONS, name)
        index += 1
    return list(names.values())


def wait_until_coordinating(target: Target, key_types: tuple[int, ...] = (0,), timeout_s: float = 60.0) -> None:
    """Wait until every group can be served. A fresh broker creates ``__consumer_offsets`` on the first lookup, then
    loads its partitions one by one, answering NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS meanwhile.

    ``key_types`` are FindCoordinator key types that must find a coordinator (1: a transactional id, whose
    ``__transaction_state`` Kafka also creates on the first lookup).
    """
    client = RawClient(target.address)
    lookups = [FindCoordinatorRequest(version=3, key="parity", key_type=key_type) for key_type in key_types]
    describe = DescribeGroupsRequest(version=0, groups=probe_groups())
    deadline = time.monotonic() + timeout_s
    try:
        while (any(client.request(lookup).error_code != 0 for lookup in lookups)
               or any(group.error_code in _NOT_READY for group in client.request(describe).groups)):
            assert time.monotonic() < deadline, f"{target.name} does not serve every group after {timeout_s} s"
            time.sleep(0.1)
    finally:
        client.close()


@pytest.fixture(scope="package")
def kafka_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    """A real Kafka 4.4.0 broker with :data:`GROUP_SETTINGS`, and :data:`TOPICS` created on it."""
    with KafkaBroker.start(tmp_path_factory.mktemp("parity-kafka"),
                           properties={**GROUP_SETTINGS, **BROKER_ONLY_SETTINGS}) as broker:
        for name, partitions in TOPICS.items():
            broker.create_topic(name, partitions)
        target = Target("kafka", BrokerAddress(broker.host, broker.port))
        wait_until_coordinating(target, key_types=(0, 1))
        yield target


@pytest.fixture(scope="module")
def groupcoord_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    """``groupcoord serve --no-spark`` (a subprocess) over a new state root holding :data:`TOPICS`."""
    workdir = tmp_path_factory.mktemp("parity-groupcoord")
    root = workdir / "root"
    catalog = TopicCatalog(StateRoot.open(root, create=True))
    for name, partitions in TOPICS.items():
        catalog.create(name, partitions)
    settings = [arg for key, value in GROUP_SETTINGS.items() for arg in ("--conf", f"{key}={value}")]
    process = ServeProcess(root, *settings, log_path=Path(workdir) / "serve.log")
    try:
        target = Target("groupcoord", process.wait_ready())
        wait_until_coordinating(target)
        yield target
    finally:
        try:
            process.terminate()  # SIGTERM: steps down and releases the lease, as in production
        finally:
            process.close()  # SIGKILL if it is still running


@pytest.fixture
def targets(kafka_target: Target, groupcoord_target: Target) -> tuple[Target, Target]:
    """Kafka first, then groupcoord: every scenario runs on both, one after the other."""
    return kafka_target, groupcoord_target
