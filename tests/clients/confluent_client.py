"""confluent-kafka (librdkafka) as a scenario :class:`~tests.clients.scenarios.Client`: ``Consumer`` and
``AdminClient``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import confluent_kafka
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._listoffsets import OffsetSpec as _OffsetSpec

from tests.clients.polled import PolledMember
from tests.clients.scenarios import ALL, HEARTBEAT_MS, SESSION_MS, TOPIC, DescribedMember, Description

TIMEOUT_S = 20.0
_STATES = {"STABLE": "Stable", "EMPTY": "Empty", "PREPARING_REBALANCE": "PreparingRebalance",
           "COMPLETING_REBALANCE": "CompletingRebalance", "DEAD": "Dead"}
"""confluent-kafka's ``ConsumerGroupState`` names as Kafka spells the states."""


def kafka_state(state: Any) -> str:
    """A ``ConsumerGroupState`` as Kafka names it (``Stable``...)."""
    name = str(state.name)
    return _STATES.get(name, name)


class ConfluentMember(PolledMember):
    """A librdkafka ``Consumer`` subscribed to the topic, polled every 100 ms."""

    def __init__(self, bootstrap: str, group: str, name: str, instance_id: str | None, *,
                 group_protocol: str = "classic") -> None:
        super().__init__(name)
        settings: dict[str, Any] = {
            "bootstrap.servers": bootstrap, "group.id": group, "client.id": name, "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "group.protocol": group_protocol}
        if group_protocol == "classic":  # the consumer protocol's timings are the coordinator's (KIP-848)
            settings.update({"session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": HEARTBEAT_MS})
        if instance_id is not None:
            settings["group.instance.id"] = instance_id
        self.consumer = confluent_kafka.Consumer(settings)
        self.consumer.subscribe([TOPIC], on_assign=lambda _consumer, _partitions: self.assigned())
        self.start()

    def poll_once(self) -> None:
        """Poll for up to 100 ms; a fatal error (fenced) raises."""
        message = self.consumer.poll(0.1)
        error = message.error() if message is not None else None
        if error is not None and error.fatal():
            raise confluent_kafka.KafkaException(error)

    def owned(self) -> frozenset[int]:
        """The assigned partitions."""
        return frozenset(tp.partition for tp in self.consumer.assignment())

    def commit_now(self, offsets: Mapping[int, int]) -> None:
        """A synchronous ``commit()``."""
        self.consumer.commit(offsets=[TopicPartition(TOPIC, p, o) for p, o in offsets.items()], asynchronous=False)

    def committed_now(self, partitions: list[int]) -> dict[int, int | None]:
        """``committed()`` (librdkafka's -1001, no offset, becomes ``None``)."""
        found = self.consumer.committed([TopicPartition(TOPIC, p) for p in partitions], timeout=TIMEOUT_S)
        return {tp.partition: tp.offset if tp.offset >= 0 else None for tp in found}

    def close_now(self) -> None:
        """``close()``."""
        self.consumer.close()


class ConfluentClient:
    """librdkafka's consumers and confluent-kafka's ``AdminClient``."""

    lacks: Mapping[str, str] = {}
    fenced_error = "FENCED|_FATAL"
    """FENCED_INSTANCE_ID from the coordinator; or ``_FATAL`` ("Local: Fatal error") once a heartbeat met the fencing
    first: librdkafka raises the fatal error "Static consumer fenced by other consumer with same group.instance.id"
    and refuses any later commit itself."""

    def __init__(self, bootstrap: str, *, group_protocol: str = "classic") -> None:
        self.bootstrap = bootstrap
        self.group_protocol = group_protocol
        self.admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": "clients-admin"})
        self.members: list[ConfluentMember] = []

    def join(self, group: str, name: str, *, instance_id: str | None = None) -> ConfluentMember:
        """A new consumer."""
        member = ConfluentMember(self.bootstrap, group, name, instance_id, group_protocol=self.group_protocol)
        self.members.append(member)
        return member

    def list_groups(self) -> dict[str, str | None]:
        """``list_consumer_groups()``."""
        listing = self.admin.list_consumer_groups(request_timeout=TIMEOUT_S).result()
        return {g.group_id: kafka_state(g.state) for g in listing.valid}

    def describe(self, group: str) -> Description:
        """``describe_consumer_groups()``."""
        described = self.admin.describe_consumer_groups([group], request_timeout=TIMEOUT_S)[group].result()
        members = tuple(DescribedMember(m.client_id, m.group_instance_id,
                                        frozenset(tp.partition for tp in m.assignment.topic_partitions))
                        for m in described.members)
        return Description(kafka_state(described.state), members)

    def group_offsets(self, group: str) -> dict[int, int]:
        """``list_consumer_group_offsets()`` of the topic."""
        request = [ConsumerGroupTopicPartitions(group)]
        found = self.admin.list_consumer_group_offsets(request, request_timeout=TIMEOUT_S)[group].result()
        return {tp.partition: tp.offset for tp in found.topic_partitions if tp.topic == TOPIC and tp.offset >= 0}

    def reset(self, group: str, to: str | int) -> None:
        """``list_offsets()`` for the earliest or latest offsets, then ``alter_consumer_group_offsets()``."""
        if isinstance(to, int):
            targets = dict.fromkeys(ALL, to)
        else:
            spec: Any = _OffsetSpec.earliest() if to == "earliest" else _OffsetSpec.latest()  # type: ignore[no-untyped-call]
            listed = self.admin.list_offsets({TopicPartition(TOPIC, p): spec for p in ALL},
                                             request_timeout=TIMEOUT_S)
            targets = {tp.partition: future.result().offset for tp, future in listed.items()}
        request = [ConsumerGroupTopicPartitions(group, [TopicPartition(TOPIC, p, o) for p, o in targets.items()])]
        altered = self.admin.alter_consumer_group_offsets(request, request_timeout=TIMEOUT_S)[group].result()
        failed = [tp for tp in altered.topic_partitions if tp.error is not None]
        assert not failed, failed

    def delete(self, group: str) -> str | None:
        """``delete_consumer_groups()``: the error's name, or ``None``."""
        error = self.admin.delete_consumer_groups([group], request_timeout=TIMEOUT_S)[group].exception()
        return None if error is None else str(error)

    def close(self) -> None:
        """Close every member still open."""
        for member in self.members:
            member.close()
