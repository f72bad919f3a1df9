"""The consumer group protocol (KIP-848, ``group.protocol=consumer``) with real clients against ``groupcoord serve``:
librdkafka (confluent-kafka) and Kafka's Java consumer and admin client.

The coordinator computes the assignment (the server assignor, ``uniform`` by default) and members reconcile
incrementally. The scenarios of :mod:`tests.clients.scenarios` that mean the same under both protocols run as they
are (join, split and hand over; commits and the admin API); static membership gets a scenario of its own, since the
consumer protocol keeps a restarted static member's partitions without fencing anyone. ``GROUPCOORD_CLIENTS_ORACLE=
kafka`` runs them against a Kafka 4.4.0 broker, which is how the expectations were checked. Both sides use Kafka's
default heartbeat interval of consumer groups (5 s), so each hand-over takes a few heartbeats.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator

import confluent_kafka
import pytest
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from tests.clients.confluent_client import ConfluentClient
from tests.clients.conftest import java_client
from tests.clients.line_client import LineClient
from tests.clients.scenarios import (
    SETTLE_S,
    TIMEOUT_S,
    Client,
    commits_and_admin,
    join_split_and_hand_over,
    owns,
    owns_everything,
    split_evenly,
    wait_for,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def static_restarts_keep_their_partitions(client: Client, group: str) -> None:
    """Static members a and b split the topic; each restarts in turn (closes: a static member leaves "for a while",
    epoch -2) and, back under its instance id, owns its partitions again while the other's assignment never
    changes."""
    ids = {name: f"{group}-{name}" for name in ("a", "b")}
    members = {"a": client.join(group, "a", instance_id=ids["a"])}
    wait_for(lambda: owns_everything(members["a"]), "a to own every partition")
    members["b"] = client.join(group, "b", instance_id=ids["b"])
    wait_for(lambda: split_evenly(*members.values()), "a and b to split the partitions")
    time.sleep(SETTLE_S)
    shares = {name: member.assignment() for name, member in members.items()}
    for name, other in (("b", "a"), ("a", "b")):
        seen = members[other].assignments()
        members[name].close()
        members[name] = client.join(group, name, instance_id=ids[name])
        wait_for(owns(members[name], shares[name]), f"restarted {name} to get its partitions back")
        time.sleep(SETTLE_S)
        assert members[other].assignments() == seen, f"the restart of {name} changed {other}'s assignment"
        assert {n: m.assignment() for n, m in members.items()} == shares
    described = client.describe(group)
    assert described.state == "Stable"
    assert {(m.instance_id, m.partitions) for m in described.members} == {(ids[n], shares[n]) for n in shares}
    for member in members.values():
        member.close()


SCENARIOS: dict[str, Callable[[Client, str], None]] = {
    "join-split-hand-over": join_split_and_hand_over,
    "commits-admin": commits_and_admin,
    "static-restarts": static_restarts_keep_their_partitions,
}
CLIENTS = {"confluent-kafka": [], "java": [pytest.mark.jvm]}


@pytest.fixture(scope="module")
def java(bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LineClient]:
    """One JVM of Kafka's Java clients on the consumer protocol for the module (a JVM takes seconds to start)."""
    client = java_client(bootstrap, tmp_path_factory.getbasetemp() / "java-consumer-protocol.log",
                         group_protocol="consumer")
    yield client
    client.close()


@pytest.mark.parametrize(("client_name", "scenario"), [
    pytest.param(name, scenario, marks=marks, id=f"{name}-{scenario}")
    for name, marks in CLIENTS.items() for scenario in SCENARIOS])
def test_consumer_protocol(bootstrap: str, request: pytest.FixtureRequest, client_name: str, scenario: str) -> None:
    group = "consumer-protocol-" + re.sub(r"[^A-Za-z0-9]+", "-", request.node.callspec.id)
    if client_name == "java":
        java: LineClient = request.getfixturevalue("java")
        try:
            SCENARIOS[scenario](java, group)
        finally:
            java.close_members()
        return
    client = ConfluentClient(bootstrap, group_protocol="consumer")
    try:
        SCENARIOS[scenario](client, group)
    finally:
        client.close()



def test_a_regex_subscription_takes_a_new_matching_topic(bootstrap: str, request: pytest.FixtureRequest) -> None:
    """librdkafka subscribes to ``^<prefix>-.*`` (a regex, resolved by the coordinator in RE2 syntax); a topic created
    later that matches joins the member's assignment, one that does not stays out."""
    prefix = "regex-" + re.sub(r"[^A-Za-z0-9]+", "-", request.node.name)[-30:]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    _create(admin, f"{prefix}-a", f"other-{prefix}")
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": prefix,
                                         "group.protocol": "consumer", "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([f"^{re.escape(prefix)}-.*"])
        _poll_until(consumer, lambda: _owned(consumer) == [(f"{prefix}-a", 0), (f"{prefix}-a", 1)], "the first topic")
        _create(admin, f"{prefix}-b")
        _poll_until(consumer, lambda: len(_owned(consumer)) == 4, "the new matching topic")
        assert {topic for topic, _ in _owned(consumer)} == {f"{prefix}-a", f"{prefix}-b"}
    finally:
        consumer.close()


@pytest.mark.jvm
def test_a_java_subscription_pattern_takes_a_new_matching_topic(bootstrap: str, java: LineClient,
                                                               request: pytest.FixtureRequest) -> None:
    """Kafka's Java consumer subscribes with a ``SubscriptionPattern`` (KIP-848: the coordinator resolves it, in RE2
    syntax, against whole topic names); a topic created later that matches joins its assignment, one that does not
    stays out."""
    prefix = "pattern-" + re.sub(r"[^A-Za-z0-9]+", "-", request.node.name)[-30:]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    _create(admin, f"{prefix}-a", f"other-{prefix}")
    member = java.join(prefix, "a", pattern=f"{re.escape(prefix)}-.*")
    try:
        wait_for(lambda: member.owned() == [f"{prefix}-a-0", f"{prefix}-a-1"], "the first matching topic")
        _create(admin, f"{prefix}-b")
        wait_for(lambda: len(member.owned()) == 4, "the new matching topic")
        assert member.owned() == [f"{prefix}-a-0", f"{prefix}-a-1", f"{prefix}-b-0", f"{prefix}-b-1"]
    finally:
        member.close()


def _owned(consumer: confluent_kafka.Consumer) -> list[tuple[str, int]]:
    return sorted((tp.topic, tp.partition) for tp in consumer.assignment())


def _create(admin: AdminClient, *topics: str) -> None:
    for future in admin.create_topics([NewTopic(t, num_partitions=2, replication_factor=1) for t in topics]).values():
        future.result(timeout=TIMEOUT_S)


def _poll_until(consumer: confluent_kafka.Consumer, done: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting for {what}: {consumer.assignment()}"
        consumer.poll(0.1)
