"""Parity with real clients: kafka-python (KafkaConsumer, KafkaAdminClient), librdkafka (confluent-kafka) and Kafka's
Java consumer (``tests/parity/java``).

The same client code runs against Kafka 4.4.0's coordinator, then against ``groupcoord serve``, and records what its
API returns: assignments, committed offsets, and the groups as the admin clients list, describe and delete them.

A librdkafka consumer holding partitions on groupcoord spins a core while groupcoord serves no Produce (it cannot
fetch there, see docs/compatibility.md), so the librdkafka consumer closes as soon as it has committed.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import confluent_kafka
import pytest
from confluent_kafka.admin import AdminClient
from kafka import ConsumerRebalanceListener, KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata

from groupcoord.devbroker import TEST_JVM_OPTIONS
from groupcoord.devbroker.java_build import java_command
from tests.parity.observe import Observation, assert_parity, differs
from tests.parity.targets import OTHER_TOPIC, TOPIC, TOPICS, Target, group_name
from tests.parity.test_static import ANOTHER_TOPIC_DIFFERENCE

pytestmark = [pytest.mark.kafka, pytest.mark.integration]

TIMEOUT_S = 30.0
REPO = Path(__file__).resolve().parents[2]
JAVA_DIR = Path(__file__).resolve().parent / "java"
JAVA_BUILD = REPO / "var" / "parity-java"
STATIC_SESSION_MS = 6000
"""The shortest session the coordinators accept (``group.min.session.timeout.ms``): a static member closed without
leaving stays in the group that long."""


def wait_until(condition: Callable[[], bool], step: Callable[[], Any], what: str) -> None:
    """Call ``step`` until ``condition`` holds; fail after :data:`TIMEOUT_S`."""
    deadline = time.monotonic() + TIMEOUT_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        step()


def kafka_python_consumer_and_admin(target: Target, group: str) -> Observation:
    """A KafkaConsumer joins, commits and leaves; KafkaAdminClient lists, describes, reads offsets and deletes."""
    observation = Observation()
    consumer = KafkaConsumer(TOPIC, bootstrap_servers=target.bootstrap, group_id=group, client_id="parity-python",
                             enable_auto_commit=False, session_timeout_ms=10000, heartbeat_interval_ms=500,
                             metadata_max_age_ms=500, request_timeout_ms=15000)
    admin = KafkaAdminClient(bootstrap_servers=target.bootstrap, client_id="parity-python-admin")
    try:
        # Polls of a second: kafka-python can stall when a rejoin outlives a short poll (docs/compatibility.md).
        wait_until(lambda: len(consumer.assignment()) == 3, lambda: consumer.poll(timeout_ms=1000), "an assignment")
        observation.add("assignment", sorted(tp.partition for tp in consumer.assignment()))
        consumer.commit({TopicPartition(TOPIC, 1): OffsetAndMetadata(7, "from python", -1)})
        observation.add("committed", consumer.committed(TopicPartition(TOPIC, 1), metadata=True))
        observation.add("listed", listed(admin, group))
        observation.add("described", [admin.describe_groups([group])[group]])
        observation.add("delete while a member", deleted(admin, group))
        consumer.close()
        observation.add("offsets", sorted(admin.list_group_offsets({group: None})[group].items()))
        observation.add("delete once empty", deleted(admin, group))
        observation.add("listed after the delete", listed(admin, group))
    finally:
        consumer.close()
        admin.close()
    return observation


def listed(admin: KafkaAdminClient, group: str) -> list[dict[str, Any]]:
    """``group`` as kafka-python's ``list_groups`` shows it (nothing once deleted)."""
    return [g for g in admin.list_groups() if g["group_id"] == group]


def deleted(admin: KafkaAdminClient, group: str) -> list[tuple[str, str]]:
    """``delete_groups`` of ``group``, with each error by its class name."""
    return [(group_id, type(error).__name__) for group_id, error in admin.delete_groups([group]).items()]


def test_kafka_python_consumer_and_admin(targets: tuple[Target, Target], request: pytest.FixtureRequest) -> None:
    assert_parity(targets, kafka_python_consumer_and_admin, group_name(request.node.name))


def kafka_python_fields_of_newer_versions(target: Target, group: str) -> Observation:
    """What kafka-python's list_groups and describe_groups show in the fields of ListGroups v5 and DescribeGroups v6
    (the group type, the authorized operations) for a group of simple commits."""
    observation = Observation()
    admin = KafkaAdminClient(bootstrap_servers=target.bootstrap, client_id="parity-python-admin")
    try:
        admin.alter_group_offsets(group, {TopicPartition(TOPIC, 0): OffsetAndMetadata(1, "", -1)})
        observation.add("listed: group_type", [row.get("group_type") for row in listed(admin, group)])
        observation.add("described: authorized_operations",
                        admin.describe_groups([group])[group].get("authorized_operations"))
    finally:
        admin.close()
    return observation


def test_kafka_python_fields_of_newer_versions(targets: tuple[Target, Target],
                                              request: pytest.FixtureRequest) -> None:
    assert_parity(targets, kafka_python_fields_of_newer_versions, group_name(request.node.name))


def librdkafka_consumer_and_admin(target: Target, group: str) -> Observation:
    """A librdkafka consumer joins, commits and closes at once; confluent-kafka's AdminClient then lists, describes,
    reads the offsets and deletes the group."""
    observation = Observation()
    consumer, assigned = librdkafka_consumer(target, group)
    admin = AdminClient({"bootstrap.servers": target.bootstrap, "client.id": "parity-librdkafka-admin"})
    try:
        observation.add("assignment", assigned)
        consumer.commit(offsets=[confluent_kafka.TopicPartition(TOPIC, 2, 11, metadata="from librdkafka")],
                        asynchronous=False)
        (committed,) = consumer.committed([confluent_kafka.TopicPartition(TOPIC, 2)], timeout=10)
        observation.add("committed", (committed.offset, committed.metadata, committed.error))
    finally:
        consumer.close()
    observation.add("listed", listed_groups(admin, group))
    observation.add("described", described_consumer_group(admin, group))
    request = [confluent_kafka.ConsumerGroupTopicPartitions(group)]
    offsets = admin.list_consumer_group_offsets(request)[group].result().topic_partitions
    observation.add("offsets", sorted((p.topic, p.partition, p.offset, p.metadata) for p in offsets))
    observation.add("delete", admin.delete_consumer_groups([group])[group].exception())
    observation.add("listed after the delete", listed_groups(admin, group))
    return observation


def librdkafka_consumer(target: Target, group: str, **settings: str) -> tuple[confluent_kafka.Consumer, list[int]]:
    """A librdkafka consumer of ``TOPIC`` in ``group`` that has received its assignment (the partitions, sorted)."""
    assigned: list[confluent_kafka.TopicPartition] = []
    consumer = confluent_kafka.Consumer({"bootstrap.servers": target.bootstrap, "group.id": group,
                                         "client.id": "parity-librdkafka", "enable.auto.commit": False,
                                         "session.timeout.ms": 10000, **settings})
    try:
        consumer.subscribe([TOPIC], on_assign=lambda _consumer, partitions: assigned.extend(partitions))
        wait_until(lambda: bool(assigned), lambda: consumer.poll(0.1), "an assignment")
    except BaseException:
        consumer.close()
        raise
    return consumer, sorted(p.partition for p in assigned)


def described_consumer_group(admin: AdminClient, group: str) -> dict[str, Any]:
    """What confluent-kafka's describe_consumer_groups shows of ``group`` (members by instance id and partitions)."""
    description = admin.describe_consumer_groups([group])[group].result()
    members = sorted((str(m.group_instance_id), m.client_id,
                      sorted(p.partition for p in m.assignment.topic_partitions)) for m in description.members)
    return {"state": str(description.state), "simple": description.is_simple_consumer_group,
            "assignor": description.partition_assignor, "members": members}


def librdkafka_static_member(target: Target, group: str) -> Observation:
    """A static librdkafka member closes (a static member sends no LeaveGroup) and a new one takes its place."""
    observation = Observation()
    admin = AdminClient({"bootstrap.servers": target.bootstrap, "client.id": "parity-librdkafka-admin"})
    for round_ in ("first", "after a restart"):
        consumer, assigned = librdkafka_consumer(target, group, **{"group.instance.id": "parity-static"})
        consumer.close()
        observation.add(f"assignment, {round_}", assigned)
        observation.add(f"described once closed, {round_}", described_consumer_group(admin, group))
    return observation


def test_librdkafka_static_member(targets: tuple[Target, Target], request: pytest.FixtureRequest) -> None:
    assert_parity(targets, librdkafka_static_member, group_name(request.node.name))


def listed_groups(admin: AdminClient, group: str) -> list[tuple[str, bool, str]]:
    """``group`` as confluent-kafka's list_consumer_groups shows it (nothing once deleted)."""
    listing = admin.list_consumer_groups().result()
    return [(g.group_id, g.is_simple_consumer_group, str(g.state)) for g in listing.valid if g.group_id == group]


def test_librdkafka_consumer_and_admin(targets: tuple[Target, Target], request: pytest.FixtureRequest) -> None:
    assert_parity(targets, librdkafka_consumer_and_admin, group_name(request.node.name))


class RecordingListener(ConsumerRebalanceListener):  # type: ignore[misc]
    """kafka-python's rebalance listener calls, in order, as ``"assigned ['topic-0', ...]"`` lines."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def on_partitions_revoked(self, revoked: Any) -> None:
        self.calls.append(f"revoked {partition_names(revoked)}")

    def on_partitions_assigned(self, assigned: Any) -> None:
        self.calls.append(f"assigned {partition_names(assigned)}")


def partition_names(partitions: Any) -> list[str]:
    """Partitions as ``topic-N`` (as Java prints a TopicPartition), sorted."""
    return sorted(f"{tp.topic}-{tp.partition}" for tp in partitions)


def described_static_group(target: Target, group: str) -> dict[str, Any]:
    """``group`` as kafka-python's describe_groups shows it: its members keep their subscriptions and assignments."""
    admin = KafkaAdminClient(bootstrap_servers=target.bootstrap, client_id="parity-python-admin")
    try:
        return dict(admin.describe_groups([group])[group])
    finally:
        admin.close()


def kafka_python_static_member_resubscribes(target: Target, group: str) -> Observation:
    """A static kafka-python consumer subscribes to one topic, closes (a static member sends no LeaveGroup), and a new
    one under the same instance id subscribes to another. Kafka hands it the old assignment first; the consumer refuses
    it (its subscription does not match) and rejoins, so it ends up with the new topic only. groupcoord rebalances at
    once (a kept difference): the listener sees one revocation fewer."""
    observation = Observation()
    for run, topic in (("first", TOPIC), ("after the restart", OTHER_TOPIC)):
        kafka_python_static_run(target, group, topic, observation, run)
    observation.add("described once closed", described_static_group(target, group))
    return observation


def kafka_python_static_run(target: Target, group: str, topic: str, observation: Observation, run: str) -> None:
    """A static KafkaConsumer subscribes to ``topic``, polls until it holds that topic's partitions only, records
    them, its generation and its listener's calls, and closes."""
    listener = RecordingListener()
    consumer = KafkaConsumer(bootstrap_servers=target.bootstrap, group_id=group, client_id="parity-python",
                             group_instance_id="parity-static", enable_auto_commit=False,
                             session_timeout_ms=STATIC_SESSION_MS, heartbeat_interval_ms=500, metadata_max_age_ms=500,
                             request_timeout_ms=15000)
    try:
        consumer.subscribe([topic], listener=listener)
        # The subscribed topic's metadata before the first poll joins: a kafka-python leader that assigns before its
        # coordinator has seen it rebalances once more when it arrives (on both targets, as timing has it).
        assert consumer.partitions_for_topic(topic) == set(range(TOPICS[topic]))
        wait_until(lambda: {tp.topic for tp in consumer.assignment()} == {topic},
                   lambda: consumer.poll(timeout_ms=1000), "an assignment")
        observation.add(f"assignment, {run}", partition_names(consumer.assignment()))
        observation.add(f"generation, {run}", consumer.group_metadata().generation_id)
        observation.add(f"listener, {run}", listener.calls)
    finally:
        consumer.close()


@differs(ANOTHER_TOPIC_DIFFERENCE)
def test_kafka_python_static_member_resubscribes(targets: tuple[Target, Target],
                                                 request: pytest.FixtureRequest) -> None:
    assert_parity(targets, kafka_python_static_member_resubscribes, group_name(request.node.name))


def java_static_member_resubscribes(target: Target, group: str) -> Observation:
    """The same with Kafka's Java consumer (``java/StaticResubscribe.java``): it refuses the old assignment in
    ``ConsumerCoordinator.onJoinComplete`` and rejoins."""
    observation = Observation()
    command = java_command(JAVA_DIR / "StaticResubscribe.java", JAVA_BUILD, target.bootstrap, group, "parity-static",
                           str(STATIC_SESSION_MS), TOPIC, OTHER_TOPIC,
                           jvm_options=(*TEST_JVM_OPTIONS, "-Dorg.apache.logging.log4j.level=WARN"))
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"StaticResubscribe failed on {target.name}:\n{done.stderr[-4000:]}"
    for run, line in zip(("first", "after the restart"), done.stdout.splitlines(), strict=True):
        observation.add(f"run, {run}", json.loads(line))
    observation.add("described once closed", described_static_group(target, group))
    return observation


@pytest.mark.jvm
@differs(ANOTHER_TOPIC_DIFFERENCE)
def test_java_static_member_resubscribes(targets: tuple[Target, Target], request: pytest.FixtureRequest) -> None:
    assert_parity(targets, java_static_member_resubscribes, group_name(request.node.name))


