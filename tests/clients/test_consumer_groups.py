"""Every client's consumer groups against ``groupcoord serve``: each scenario of :mod:`tests.clients.scenarios` with
kafka-python, aiokafka, confluent-kafka (librdkafka), kafkajs (node, marked ``node``) and Kafka's Java consumer and
admin client (marked ``jvm``). A client without static membership (kafkajs) skips the static scenario."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.clients.aiokafka_client import AiokafkaClient
from tests.clients.confluent_client import ConfluentClient
from tests.clients.conftest import java_client, node_client
from tests.clients.kafka_python_client import KafkaPythonClient
from tests.clients.scenarios import SCENARIOS, Client

pytestmark = [pytest.mark.integration]

CLIENTS: dict[str, Callable[[str, Path], Client]] = {
    "kafka-python": lambda bootstrap, _log: KafkaPythonClient(bootstrap),
    "aiokafka": lambda bootstrap, _log: AiokafkaClient(bootstrap),
    "confluent-kafka": lambda bootstrap, _log: ConfluentClient(bootstrap),
    "kafkajs": node_client,
    "java": java_client,
}
"""How to start each client against ``bootstrap`` (a process's stderr goes to the log path)."""
MARKS = {"kafkajs": [pytest.mark.node], "java": [pytest.mark.jvm]}


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("client_name", [pytest.param(name, marks=MARKS.get(name, [])) for name in CLIENTS])
def test_consumer_group(bootstrap: str, tmp_path: Path, request: pytest.FixtureRequest, client_name: str,
                        scenario: str) -> None:
    client = CLIENTS[client_name](bootstrap, tmp_path / f"{client_name}.log")
    try:
        if scenario.startswith("static") and not client.static_membership:
            pytest.skip(f"{client_name} has no static membership (group.instance.id)")
        SCENARIOS[scenario](client, "clients-" + re.sub(r"[^A-Za-z0-9]+", "-", request.node.name).strip("-"))
    finally:
        client.close()
