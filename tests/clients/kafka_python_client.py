"""kafka-python as a scenario :class:`~tests.clients.scenarios.Client`: ``KafkaConsumer`` and ``KafkaAdminClient``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka import ConsumerRebalanceListener, KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.admin import OffsetSpec
from kafka.structs import OffsetAndMetadata

from tests.clients.polled import PolledMember
from tests.clients.scenarios import ALL, HEARTBEAT_MS, SESSION_MS, TOPIC, DescribedMember, Description


class _Counting(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, member: PolledMember) -> None:
        self._member = member

    def on_partitions_revoked(self, revoked: Any) -> None:
        """Nothing to do: the member commits explicitly."""

    def on_partitions_assigned(self, assigned: Any) -> None:
        """Count the assignment."""
        self._member.assigned()


class KafkaPythonMember(PolledMember):
    """A ``KafkaConsumer`` subscribed to the topic, polled once a second (shorter polls can strand a rejoin, see
    docs/compatibility.md); it reads the topic's metadata once subscribed, before its first poll, as that page
    advises."""

    def __init__(self, bootstrap: str, group: str, name: str, instance_id: str | None) -> None:
        super().__init__(name)
        self.consumer = KafkaConsumer(
            bootstrap_servers=bootstrap, group_id=group, client_id=name, group_instance_id=instance_id,
            enable_auto_commit=False, auto_offset_reset="earliest", session_timeout_ms=SESSION_MS,
            heartbeat_interval_ms=HEARTBEAT_MS, request_timeout_ms=20_000)
        # Subscribe, then read the topic's metadata, before the first poll: the leader compares the metadata it
        # assigned with to later metadata, and a snapshot taken before the subscription named the topic differs from
        # the first update after it, so the group would rebalance right after its first assignment (against Kafka too)
        self.consumer.subscribe([TOPIC], listener=_Counting(self))
        self.consumer.partitions_for_topic(TOPIC)
        self.start()

    def poll_once(self) -> None:
        """Poll for up to a second."""
        self.consumer.poll(timeout_ms=1000)

    def owned(self) -> frozenset[int]:
        """The assigned partitions."""
        return frozenset(tp.partition for tp in self.consumer.assignment())

    def commit_now(self, offsets: Mapping[int, int]) -> None:
        """``commit()`` of the offsets."""
        self.consumer.commit({TopicPartition(TOPIC, p): OffsetAndMetadata(o, "", -1) for p, o in offsets.items()})

    def committed_now(self, partitions: list[int]) -> dict[int, int | None]:
        """``committed()`` of each partition."""
        return {p: self.consumer.committed(TopicPartition(TOPIC, p)) for p in partitions}

    def close_now(self) -> None:
        """``close()``."""
        self.consumer.close()


class KafkaPythonClient:
    """kafka-python's consumers and ``KafkaAdminClient``."""

    lacks: Mapping[str, str] = {}
    fenced_error = "FencedInstanceId"

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="clients-admin")
        self.members: list[KafkaPythonMember] = []

    def join(self, group: str, name: str, *, instance_id: str | None = None) -> KafkaPythonMember:
        """A new consumer."""
        member = KafkaPythonMember(self.bootstrap, group, name, instance_id)
        self.members.append(member)
        return member

    def list_groups(self) -> dict[str, str | None]:
        """``list_groups()``: id and ``group_state``."""
        return {row["group_id"]: row["group_state"] for row in self.admin.list_groups()}

    def describe(self, group: str) -> Description:
        """``describe_groups()``, with each member's decoded assignment."""
        described = self.admin.describe_groups([group])[group]
        members = tuple(DescribedMember(m["client_id"], m["group_instance_id"], _partitions(m["member_assignment"]))
                        for m in described["members"])
        return Description(described["group_state"], members)

    def group_offsets(self, group: str) -> dict[int, int]:
        """``list_group_offsets()`` of the topic."""
        offsets = self.admin.list_group_offsets({group: None})[group]
        return {tp.partition: om.offset for tp, om in offsets.items() if tp.topic == TOPIC and om.offset >= 0}

    def reset(self, group: str, to: str | int) -> None:
        """``reset_group_offsets()`` with ``OffsetSpec.EARLIEST`` / ``LATEST`` or an explicit offset."""
        spec: Any = {"earliest": OffsetSpec.EARLIEST, "latest": OffsetSpec.LATEST}.get(str(to), to)
        results = self.admin.reset_group_offsets(group, {TopicPartition(TOPIC, p): spec for p in ALL})
        failed = {tp: r["error"] for tp, r in results.items() if r["error"] not in (None, 0) and r["error"].errno}
        assert not failed, failed

    def delete(self, group: str) -> str | None:
        """``delete_groups()``: the error's class name, or ``None`` (kafka-python answers ``"OK"``)."""
        result = str(self.admin.delete_groups([group])[group])
        return None if result == "OK" else result

    def close(self) -> None:
        """Close every member still open, then the admin client."""
        for member in self.members:
            member.close()
        self.admin.close()


def _partitions(assignment: Any) -> frozenset[int]:
    """The partitions of the topic in a decoded assignment (``describe_groups`` gives it as a dict)."""
    if not assignment:
        return frozenset()
    return frozenset(p for topic in assignment["assigned_partitions"] if topic["topic"] == TOPIC
                     for p in topic["partitions"])
