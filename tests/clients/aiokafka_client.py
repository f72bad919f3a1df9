"""aiokafka as a scenario :class:`~tests.clients.scenarios.Client`: ``AIOKafkaConsumer`` and ``AIOKafkaAdminClient``.

Each consumer runs on an event loop of its own thread (see :mod:`tests.clients.polled`). aiokafka's admin client
lists groups and reads their offsets; it offers no call to alter offsets or delete a group, so a reset is done as
aiokafka offers it, by a consumer of the group (``assign``, ``seek_to_beginning``/``seek_to_end``/``seek``,
``commit``), and the scenarios leave the delete out. Its ``describe_consumer_groups`` cannot decode any answer of a
broker that serves DescribeGroups v3 (aiokafka 0.14 reads the v3 answer with the v2 schema: "Buffer underrun decoding
string", against Kafka 4.4.0 as against groupcoord), so groups are not described, and listed without their state.
Both gaps are in :attr:`AiokafkaClient.lacks`, which the capability test checks by calling them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from tests.clients.polled import PolledMember
from tests.clients.scenarios import ALL, DELETE, DESCRIBE, HEARTBEAT_MS, SESSION_MS, TOPIC, Description

T = TypeVar("T")


class _Counting(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, member: PolledMember) -> None:
        self._member = member

    async def on_partitions_revoked(self, revoked: Any) -> None:
        """Nothing to do: the member commits explicitly."""

    async def on_partitions_assigned(self, assigned: Any) -> None:
        """Count the assignment."""
        self._member.assigned()


class AiokafkaMember(PolledMember):
    """An ``AIOKafkaConsumer`` subscribed to the topic, on its thread's event loop, polled every 100 ms."""

    def __init__(self, bootstrap: str, group: str, name: str, instance_id: str | None) -> None:
        super().__init__(name)
        self.loop = asyncio.new_event_loop()
        self.consumer: AIOKafkaConsumer | None = None
        self.start()
        self.call(lambda: self._run(self._start(bootstrap, group, name, instance_id)))

    async def _start(self, bootstrap: str, group: str, name: str, instance_id: str | None) -> None:
        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, group_id=group, client_id=name, group_instance_id=instance_id,
            enable_auto_commit=False, auto_offset_reset="earliest", session_timeout_ms=SESSION_MS,
            heartbeat_interval_ms=HEARTBEAT_MS)
        self.consumer.subscribe([TOPIC], listener=_Counting(self))
        await self.consumer.start()

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coroutine)

    def _started(self) -> AIOKafkaConsumer:
        assert self.consumer is not None, "the consumer is not started"
        return self.consumer

    def poll_once(self) -> None:
        """``getmany()`` for up to 100 ms (aiokafka's group work runs on the loop meanwhile)."""
        if self.consumer is not None:
            self._run(self.consumer.getmany(timeout_ms=100))

    def owned(self) -> frozenset[int]:
        """The assigned partitions."""
        return frozenset(tp.partition for tp in self.consumer.assignment()) if self.consumer else frozenset()

    def commit_now(self, offsets: Mapping[int, int]) -> None:
        """``commit()``."""
        self._run(self._started().commit({TopicPartition(TOPIC, p): o for p, o in offsets.items()}))

    def committed_now(self, partitions: list[int]) -> dict[int, int | None]:
        """``committed()`` of each partition."""
        consumer = self._started()
        return {p: self._run(consumer.committed(TopicPartition(TOPIC, p))) for p in partitions}

    def close_now(self) -> None:
        """``stop()``, then the loop closes."""
        self._run(self._started().stop())
        self.loop.close()


class AiokafkaClient:
    """aiokafka's consumers and ``AIOKafkaAdminClient`` (on the test thread's own event loop)."""

    lacks: Mapping[str, str] = {
        DESCRIBE: "describe_consumer_groups() reads DescribeGroups v3+ answers with the v2 schema and fails",
        DELETE: "AIOKafkaAdminClient has no call to delete a group"}
    fenced_error = "CommitFailedError"

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.loop = asyncio.new_event_loop()
        self.admin = self._run(self._started_admin())
        self.members: list[AiokafkaMember] = []

    async def _started_admin(self) -> AIOKafkaAdminClient:
        admin = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap, client_id="clients-admin")
        await admin.start()
        return admin

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coroutine)

    def join(self, group: str, name: str, *, instance_id: str | None = None) -> AiokafkaMember:
        """A new consumer."""
        member = AiokafkaMember(self.bootstrap, group, name, instance_id)
        self.members.append(member)
        return member

    def list_groups(self) -> dict[str, str | None]:
        """``list_consumer_groups()``: the ids (its listing has no state, and describing fails, see above)."""
        return dict.fromkeys((group_id for group_id, _protocol_type in self._run(self.admin.list_consumer_groups())))

    def describe(self, group: str) -> Description:
        """``describe_consumer_groups()``, which raises in aiokafka 0.14 (see the module docstring): the capability
        test calls it to show that it still does."""
        self._run(self.admin.describe_consumer_groups([group]))
        raise AssertionError("aiokafka described a group: it offers describe now, update AiokafkaClient.lacks")

    def group_offsets(self, group: str) -> dict[int, int]:
        """``list_consumer_group_offsets()`` of the topic."""
        offsets = self._run(self.admin.list_consumer_group_offsets(group))
        return {tp.partition: om.offset for tp, om in offsets.items() if tp.topic == TOPIC and om.offset >= 0}

    def reset(self, group: str, to: str | int) -> None:
        """A consumer of ``group`` assigns every partition, seeks and commits its positions."""
        self._run(self._reset(group, to))

    async def _reset(self, group: str, to: str | int) -> None:
        consumer = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, group_id=group, client_id="clients-reset",
                                    enable_auto_commit=False)
        await consumer.start()
        try:
            partitions = [TopicPartition(TOPIC, p) for p in sorted(ALL)]
            consumer.assign(partitions)
            if to == "earliest":
                await consumer.seek_to_beginning(*partitions)
            elif to == "latest":
                await consumer.seek_to_end(*partitions)
            else:
                for tp in partitions:
                    consumer.seek(tp, int(to))
            await consumer.commit({tp: await consumer.position(tp) for tp in partitions})
        finally:
            await consumer.stop()

    def delete(self, group: str) -> str | None:
        """``delete_consumer_groups()``, which aiokafka 0.14's admin client does not have (AttributeError): the
        capability test calls it to show that it still does not."""
        self._run(self.admin.delete_consumer_groups([group]))
        raise AssertionError("aiokafka deleted a group: it offers delete now, update AiokafkaClient.lacks")

    def close(self) -> None:
        """Close every member still open, then the admin client."""
        for member in self.members:
            member.close()
        self._run(self.admin.close())
        self.loop.close()


