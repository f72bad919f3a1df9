"""Every client's consumer groups against ``groupcoord serve``: each scenario of :mod:`tests.clients.scenarios` with
kafka-python, aiokafka, confluent-kafka (librdkafka), kafkajs (node, marked ``node``) and Kafka's Java consumer and
admin client (marked ``jvm``).

A scenario that needs a capability the client lacks (kafkajs has no static membership) is not run for it; instead
:func:`test_capabilities` shows that the client really lacks each capability it names, and that the "Clients tested"
table of docs/compatibility.md lists the client's installed version and exactly those gaps.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import confluent_kafka
import pytest

from groupcoord.config.jars import kafka_classpath
from tests.clients.aiokafka_client import AiokafkaClient
from tests.clients.confluent_client import ConfluentClient
from tests.clients.conftest import KAFKAJS_LACKS, NODE_DIR, REPO, java_client, node_client
from tests.clients.kafka_python_client import KafkaPythonClient
from tests.clients.line_client import LineClient
from tests.clients.scenarios import (
    CAPABILITIES,
    DESCRIBE,
    NEEDS,
    SCENARIOS,
    STATIC,
    Client,
    owns_everything,
    split_evenly,
    wait_for,
)

pytestmark = [pytest.mark.integration]

CLIENTS: dict[str, Callable[[str, Path], Client]] = {
    "kafka-python": lambda bootstrap, _log: KafkaPythonClient(bootstrap),
    "aiokafka": lambda bootstrap, _log: AiokafkaClient(bootstrap),
    "confluent-kafka": lambda bootstrap, _log: ConfluentClient(bootstrap),
    "kafkajs": node_client,
    "java": java_client,
}
"""How to start each client against ``bootstrap`` (a process's stderr goes to the log path)."""
SHARED = {"kafkajs", "java"}
"""Clients in a process of their own, started once for the module (a JVM takes seconds to start): each test closes
the consumers it joined and leaves the process and its admin client to the next."""
MARKS = {"kafkajs": [pytest.mark.node], "java": [pytest.mark.jvm]}
LACKING: dict[str, Mapping[str, str]] = {
    "kafka-python": KafkaPythonClient.lacks, "aiokafka": AiokafkaClient.lacks, "confluent-kafka": ConfluentClient.lacks,
    "kafkajs": KAFKAJS_LACKS, "java": {}}
"""What each client lacks, known at collection time (:func:`test_capabilities` checks that the client started
says the same)."""
DOCS = REPO / "docs" / "compatibility.md"


def _client_params() -> list[object]:
    return [pytest.param(name, marks=MARKS.get(name, [])) for name in CLIENTS]


def _runs() -> list[object]:
    return [pytest.param(name, scenario, marks=MARKS.get(name, []), id=f"{name}-{scenario}")
            for name in CLIENTS for scenario in SCENARIOS if NEEDS.get(scenario) not in LACKING[name]]


def _group(request: pytest.FixtureRequest) -> str:
    return "clients-" + re.sub(r"[^A-Za-z0-9]+", "-", request.node.name).strip("-")


@pytest.fixture(scope="module")
def processes() -> Iterator[dict[str, LineClient]]:
    """The :data:`SHARED` clients started so far in this module, by name; each ends with the module."""
    started: dict[str, LineClient] = {}
    yield started
    for client in started.values():
        client.close()


@contextmanager
def _client(name: str, bootstrap: str, processes: dict[str, LineClient], log_dir: Path) -> Iterator[Client]:
    """Client ``name`` for one test: the module's process of a :data:`SHARED` client (its consumers closed after the
    test), else a new client closed after the test."""
    if name not in SHARED:
        client = CLIENTS[name](bootstrap, log_dir / f"{name}.log")
        try:
            yield client
        finally:
            client.close()
        return
    if name not in processes:
        started = CLIENTS[name](bootstrap, log_dir / f"{name}.log")
        assert isinstance(started, LineClient)
        processes[name] = started
    try:
        yield processes[name]
    finally:
        processes[name].close_members()


@pytest.mark.parametrize(("client_name", "scenario"), _runs())
def test_consumer_group(bootstrap: str, processes: dict[str, LineClient], tmp_path_factory: pytest.TempPathFactory,
                        request: pytest.FixtureRequest, client_name: str, scenario: str) -> None:
    with _client(client_name, bootstrap, processes, tmp_path_factory.getbasetemp()) as client:
        SCENARIOS[scenario](client, _group(request))


def _versions(client_name: str) -> list[str]:
    """The installed versions the docs must name for ``client_name``."""
    if client_name == "kafkajs":
        return [json.loads((NODE_DIR / "node_modules" / "kafkajs" / "package.json").read_text())["version"]]
    if client_name == "java":
        found = re.search(r"kafka-clients-([^/:]+)\.jar", kafka_classpath())
        assert found, "no kafka-clients jar in .venv/jars/kafka"
        return [found.group(1)]
    versions = [importlib.metadata.version(client_name)]
    if client_name == "confluent-kafka":
        versions.append(f"librdkafka {confluent_kafka.libversion()[0]}")
    return versions


def _docs_row(client_name: str) -> list[str]:
    """The cells of the "Clients tested" table's row of ``client_name`` (its first cell names it in backticks)."""
    section = DOCS.read_text().split("## Clients tested", 1)[1].split("\n## ", 1)[0]
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in section.splitlines()
            if line.startswith("|")]
    found = [row for row in rows if f"`{client_name}`" in row[0]]
    assert len(found) == 1, f"docs/compatibility.md's Clients tested table has no single row for `{client_name}`"
    return found[0]


def _offers(client: Client, capability: str, group: str) -> bool:
    """Whether ``capability`` works with ``client`` against the target: static members with one instance id
    fence each other instead of splitting the topic; describe and delete answer instead of raising."""
    if capability == STATIC:
        first = client.join(group, "a", instance_id=f"{group}-a")
        wait_for(lambda: owns_everything(first), "a to own every partition")
        second = client.join(group, "a", instance_id=f"{group}-a")
        try:
            wait_for(lambda: split_evenly(first, second), "two consumers of one instance id to split", timeout_s=15)
        except AssertionError:
            return True
        finally:
            second.close()
            first.close()
        return False
    try:
        client.describe(group) if capability == DESCRIBE else client.delete(group)
    except Exception:
        return False
    return True


@pytest.mark.parametrize("client_name", _client_params())
def test_capabilities(bootstrap: str, processes: dict[str, LineClient], tmp_path_factory: pytest.TempPathFactory,
                      request: pytest.FixtureRequest, client_name: str) -> None:
    """What a client lacks is real and documented, and the docs name the version tested."""
    with _client(client_name, bootstrap, processes, tmp_path_factory.getbasetemp()) as client:
        assert client.lacks == LACKING[client_name] and set(client.lacks) <= set(CAPABILITIES)
        row = _docs_row(client_name)
        for version in _versions(client_name):
            assert version in row[1], f"docs/compatibility.md names {row[1]!r} for {client_name}, installed {version}"
        documented = set(re.findall(r"\*\*([a-z ]+)\*\*", row[-1]))
        assert documented == set(client.lacks), f"the docs' gaps of {client_name}: {row[-1]!r}"
        group = _group(request)
        if client.lacks.keys() - {STATIC}:
            member = client.join(group, "probe")  # an Empty group with an offset, to describe and delete
            wait_for(lambda: owns_everything(member), "the probe to own every partition")
            assert member.commit({0: 1}) is None
            member.close()
        for capability in client.lacks:
            assert not _offers(client, capability, group), f"{client_name} offers {capability} now"
