"""Rolling upgrades between the classic protocol and the consumer protocol (KIP-848), with librdkafka
(confluent-kafka), both ways.

Three consumers of one group consume a topic that a producer keeps writing to, committing each record as they go.
One by one, each classic consumer closes and a consumer with ``group.protocol=consumer`` takes its place, while the
others keep consuming: the first one converts the live classic group to a consumer group (Kafka's default
``group.consumer.migration.policy``, ``bidirectional``), the classic members rebalance inside it through JoinGroup,
SyncGroup and Heartbeat, and the last classic member's leave leaves a consumer group of consumer-protocol members.
The way back rolls consumer-protocol consumers to classic ones: they join the consumer group as classic members, and
the last consumer-protocol member's leave turns the group into a classic group again (the downgrade).

What must hold, against ``serve`` as against Kafka 4.4.0 (``GROUPCOORD_CLIENTS_ORACLE=kafka``):

- after each step and at the end, every partition is owned by exactly one live consumer;
- a record is consumed again only if no commit covered it when it was consumed again (each record's commit follows
  it, so a duplicate is a record whose owner lost it before its commit went through);
- the group's committed offsets never go back (the classic group's offsets stay through the conversion), and at the
  end they are the log end of every partition: every record produced was consumed and committed.
"""

from __future__ import annotations

import itertools
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import confluent_kafka
import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, ConsumerGroupType, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from tests.clients.conftest import java_client
from tests.clients.polled import PolledMember
from tests.clients.scenarios import HEARTBEAT_MS, SESSION_MS, TIMEOUT_S, Client, Member, split_evenly, wait_for
from tests.clients.scenarios import PARTITIONS as SCENARIO_PARTITIONS

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PARTITIONS = 4
CONSUMERS = 3
PRODUCE_INTERVAL_S = 0.02
"""About 50 records a second across the partitions while the group rolls."""


@dataclass
class Ledger:
    """Every consumption and every successful commit, in the order they happened (one lock for both)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    seen: dict[tuple[int, int], int] = field(default_factory=dict)
    committed: dict[int, int] = field(default_factory=dict)
    uncovered_duplicates: list[tuple[int, int, int]] = field(default_factory=list)
    covered_duplicates: int = 0

    def consumed(self, partition: int, offset: int) -> None:
        """Record a consumption: a record seen before must not be covered by a commit yet."""
        with self.lock:
            key = (partition, offset)
            if key in self.seen:
                if offset < self.committed.get(partition, 0):
                    self.uncovered_duplicates.append((partition, offset, self.committed[partition]))
                else:
                    self.covered_duplicates += 1
            self.seen[key] = self.seen.get(key, 0) + 1

    def commit_succeeded(self, partition: int, next_offset: int) -> None:
        """Record a commit the coordinator accepted."""
        with self.lock:
            self.committed[partition] = max(self.committed.get(partition, 0), next_offset)


class RollingConsumer(PolledMember):
    """A librdkafka consumer of the rolling topic that commits every record it consumes, synchronously."""

    def __init__(self, bootstrap: str, group: str, topic: str, name: str, group_protocol: str,
                 ledger: Ledger) -> None:
        super().__init__(name)
        settings: dict[str, Any] = {
            "bootstrap.servers": bootstrap, "group.id": group, "client.id": name, "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "group.protocol": group_protocol}
        if group_protocol == "classic":
            settings.update({"session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": HEARTBEAT_MS})
        self.ledger = ledger
        self.commit_failures = 0
        self.consumer = confluent_kafka.Consumer(settings)
        self.consumer.subscribe([topic], on_assign=lambda _consumer, _partitions: self.assigned())
        self.start()

    def poll_once(self) -> None:
        """Consume at most one record and commit it."""
        message = self.consumer.poll(0.1)
        if message is None:
            return
        error = message.error()
        if error is not None:
            if error.fatal():
                raise confluent_kafka.KafkaException(error)
            return
        partition, offset = message.partition(), message.offset()
        assert partition is not None and offset is not None
        self.ledger.consumed(partition, offset)
        try:
            self.consumer.commit(message=message, asynchronous=False)
        except confluent_kafka.KafkaException:
            self.commit_failures += 1
            return
        self.ledger.commit_succeeded(partition, offset + 1)

    def owned(self) -> frozenset[int]:
        """The assigned partitions."""
        return frozenset(tp.partition for tp in self.consumer.assignment())

    def close_now(self) -> None:
        """``close()``: a classic member leaves with LeaveGroup, a consumer-protocol member with epoch -1."""
        self.consumer.close()


class Producer:
    """Writes numbered records round robin over the partitions on a thread of its own until stopped."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
        self.topic = topic
        self.sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rolling-producer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.producer.produce(self.topic, value=str(self.sent).encode(), partition=self.sent % PARTITIONS)
            self.producer.poll(0)
            self.sent += 1
            time.sleep(PRODUCE_INTERVAL_S)

    def stop(self) -> None:
        """Stop producing and wait until every record is acknowledged (once; later calls do nothing)."""
        if self._stop.is_set():
            return
        self._stop.set()
        self._thread.join(timeout=30)
        assert self.producer.flush(TIMEOUT_S) == 0, "records left unacknowledged"


def each_partition_owned_once(members: list[RollingConsumer]) -> bool:
    """Every partition of the topic is owned by exactly one of ``members``."""
    owned = [p for member in members for p in member.assignment()]
    return sorted(owned) == list(range(PARTITIONS))


def committed_offsets(admin: AdminClient, group: str, topic: str) -> dict[int, int]:
    """The group's committed offsets of ``topic``."""
    request = [ConsumerGroupTopicPartitions(group)]
    found = admin.list_consumer_group_offsets(request, request_timeout=TIMEOUT_S)[group].result()
    return {tp.partition: tp.offset for tp in found.topic_partitions if tp.topic == topic and tp.offset >= 0}


def log_end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    """The log end offset of each partition."""
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "rolling-watermarks"})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=TIMEOUT_S)[1]
                for p in range(PARTITIONS)}
    finally:
        consumer.close()


def group_type(admin: AdminClient, group: str) -> ConsumerGroupType:
    """The group's type as the admin client describes it (ConsumerGroupDescribe: consumer; else classic)."""
    described = admin.describe_consumer_groups([group], request_timeout=TIMEOUT_S)[group].result()
    return ConsumerGroupType(described.type)


def never_back(history: list[Mapping[int, int]]) -> bool:
    """Each snapshot of committed offsets is at or past the one before, partition by partition."""
    return all(later.get(p, 0) >= offset for earlier, later in itertools.pairwise(history)
               for p, offset in earlier.items())


def roll(bootstrap: str, name: str, start: str, end: str, expected_types: list[ConsumerGroupType]) -> None:
    """Three consumers of protocol ``start`` consume topic ``name`` (group ``name``) while a producer writes; one by
    one each is closed and one of protocol ``end`` takes its place. After step ``i`` the group must be of type
    ``expected_types[i]``; see the module docs for what else must hold."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, num_partitions=PARTITIONS, replication_factor=1)]).values():
        future.result(timeout=TIMEOUT_S)
    ledger = Ledger()
    producer = Producer(bootstrap, name)
    members = [RollingConsumer(bootstrap, name, name, f"{start}-{i}", start, ledger) for i in range(CONSUMERS)]
    history: list[Mapping[int, int]] = []
    try:
        wait_for(lambda: each_partition_owned_once(members) and len(ledger.committed) == PARTITIONS,
                 f"the {start} group to own and commit every partition")
        history.append(committed_offsets(admin, name, name))
        for i in range(CONSUMERS):
            members[i].close()
            members[i] = RollingConsumer(bootstrap, name, name, f"{end}-{i}", end, ledger)
            rolled = members[i]
            wait_for(lambda: each_partition_owned_once(members) and bool(rolled.assignment()),  # noqa: B023
                     f"the group to settle with {end}-{i} owning a share")
            history.append(committed_offsets(admin, name, name))
            assert group_type(admin, name) is expected_types[i], f"after step {i}"
        producer.stop()
        ends = log_end_offsets(bootstrap, name)
        wait_for(lambda: committed_offsets(admin, name, name) == ends, "every record to be consumed and committed")
        history.append(committed_offsets(admin, name, name))
        assert each_partition_owned_once(members)
        assert not ledger.uncovered_duplicates, f"records consumed again after a commit covered them: " \
                                                f"{ledger.uncovered_duplicates[:10]}"
        assert never_back(history), history
        assert set(ledger.seen) == {(p, o) for p, end in ends.items() for o in range(end)}
        described = admin.describe_consumer_groups([name], request_timeout=TIMEOUT_S)[name].result()
        assert len(described.members) == CONSUMERS
    finally:
        for member in members:
            member.close()
        producer.stop()


def test_classic_consumers_roll_to_the_consumer_protocol(bootstrap: str, request: pytest.FixtureRequest) -> None:
    """The upgrade: the first consumer-protocol consumer converts the classic group, which stays a consumer group."""
    roll(bootstrap, "rolling-up-" + re.sub(r"[^A-Za-z0-9]+", "-", request.node.name)[-30:], "classic", "consumer",
         [ConsumerGroupType.CONSUMER] * CONSUMERS)


def test_consumer_protocol_consumers_roll_back_to_classic(bootstrap: str, request: pytest.FixtureRequest) -> None:
    """The way back: classic consumers join the consumer group as members of the classic protocol, and when the last
    consumer-protocol consumer leaves the group becomes a classic group again (the downgrade)."""
    roll(bootstrap, "rolling-down-" + re.sub(r"[^A-Za-z0-9]+", "-", request.node.name)[-30:], "consumer", "classic",
         [ConsumerGroupType.CONSUMER] * (CONSUMERS - 1) + [ConsumerGroupType.CLASSIC])


def roll_members(old: Client, new: Client, group: str, count: int = 2) -> None:
    """``count`` consumers of ``old`` split the topic and commit; one by one each closes and a consumer of ``new``
    takes its place and commits on: after each step every partition has one owner and no committed offset went
    back."""
    members: list[Member] = [old.join(group, f"old-{i}") for i in range(count)]
    committed: dict[int, int] = {}

    def commit_all(step: int) -> None:
        for member in members:
            offsets = {p: step for p in member.assignment()}
            assert member.commit(offsets) is None, f"step {step}: {member} could not commit {offsets}"
            committed.update(offsets)

    wait_for(lambda: split_evenly(*members), "the old consumers to split the topic")
    commit_all(1)
    for i in range(count):
        members[i].close()
        members[i] = new.join(group, f"new-{i}")
        wait_for(lambda: split_evenly(*members) and bool(members[i].assignment()),  # noqa: B023
                 f"the group to settle with new-{i} owning a share")
        assert old.group_offsets(group) == committed, f"after step {i}: offsets went back"
        commit_all(i + 2)
    assert new.group_offsets(group) == committed == dict.fromkeys(range(SCENARIO_PARTITIONS), count + 1)
    for member in members:
        member.close()


@pytest.mark.jvm
def test_java_consumers_roll_to_the_consumer_protocol(bootstrap: str, request: pytest.FixtureRequest,
                                                      tmp_path_factory: pytest.TempPathFactory) -> None:
    """Kafka's Java consumer rolled from ``group.protocol=classic`` to ``consumer`` (two JVMs, one per protocol). A
    consumer-protocol member gets a share only once the classic group was converted (a classic group refuses it)."""
    logs = tmp_path_factory.getbasetemp()
    classic = java_client(bootstrap, logs / "java-rolling-classic.log", group_protocol="classic")
    consumer = java_client(bootstrap, logs / "java-rolling-consumer.log", group_protocol="consumer")
    try:
        roll_members(classic, consumer, "rolling-java-" + re.sub(r"[^A-Za-z0-9]+", "-", request.node.name)[-30:])
    finally:
        classic.close()
        consumer.close()
