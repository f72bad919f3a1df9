"""A kafka-python assignor that asks the groupcoord coordinator to assign (``server-<assignor>`` protocols).

Use it as any kafka-python assignor::

    KafkaConsumer("orders", group_id="billing", bootstrap_servers="127.0.0.1:9092",
                  partition_assignment_strategy=[ServerSideAssignor])          # "server-cooperative-sticky"
    KafkaConsumer(..., partition_assignment_strategy=[ServerSideAssignor.named("uniform")])  # "server-uniform"

The member's metadata carries its subscription, the partitions it owns and its last generation (ConsumerProtocol
Subscription v2), which is what the coordinator's assignors read. The coordinator assigns the group itself: its
JoinGroup answers name no leader, so every member syncs as a follower and gets its part in SyncGroup.
``server-cooperative-sticky`` uses KIP-429's cooperative protocol (kafka-python revokes only the partitions that
move, then rejoins); other names use the eager protocol.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, ClassVar

from kafka.coordinator.assignors.abstract import AbstractPartitionAssignor, RebalanceProtocol
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription
from kafka.structs import TopicPartition

from groupcoord.group.group import SERVER_ASSIGNOR_PREFIX
from groupcoord.member.config import COOPERATIVE_ASSIGNORS

_SUBSCRIPTION_VERSION = 2  # v1 adds owned partitions, v2 the generation; the coordinator reads both


class ServerSideAssignor(AbstractPartitionAssignor):  # type: ignore[misc]  # kafka-python ships no stubs here
    """Requests server-side assignment under the protocol :attr:`name` (``server-cooperative-sticky`` here;
    :meth:`named` makes a class for another server assignor)."""

    name: ClassVar[str] = SERVER_ASSIGNOR_PREFIX + "cooperative-sticky"
    version: ClassVar[int] = _SUBSCRIPTION_VERSION

    def __init__(self) -> None:
        self._owned: list[TopicPartition] = []
        self._generation = -1

    @classmethod
    def named(cls, assignor: str) -> type[ServerSideAssignor]:
        """A subclass whose protocol is ``server-<assignor>`` (``assignor`` may already carry the prefix)."""
        protocol = assignor if assignor.startswith(SERVER_ASSIGNOR_PREFIX) else SERVER_ASSIGNOR_PREFIX + assignor
        if protocol == SERVER_ASSIGNOR_PREFIX:
            raise ValueError("ServerSideAssignor.named needs an assignor name, e.g. 'sticky'")
        class_name = "ServerSideAssignor_" + "".join(c if c.isalnum() else "_" for c in protocol)
        return type(class_name, (cls,), {"name": protocol, "__doc__": f"Server-side assignment with {protocol}."})

    def supported_protocols(self) -> list[RebalanceProtocol]:
        """Cooperative for ``server-cooperative-sticky``, else eager (kafka-python refuses to mix them)."""
        if self.name in COOPERATIVE_ASSIGNORS:
            return [RebalanceProtocol.COOPERATIVE]
        return [RebalanceProtocol.EAGER]

    def metadata(self, topics: Any) -> ConsumerProtocolSubscription:
        """The Subscription this member joins with: topics, owned partitions, last generation.

        An eager member has revoked everything before it rejoins, so it reports no owned partitions.
        """
        by_topic: dict[str, list[int]] = defaultdict(list)
        cooperative = RebalanceProtocol.COOPERATIVE in self.supported_protocols()
        for tp in self._owned if cooperative else ():
            by_topic[tp.topic].append(tp.partition)
        owned = [ConsumerProtocolSubscription.TopicPartition(topic=topic, partitions=sorted(partitions))
                 for topic, partitions in sorted(by_topic.items())]
        return ConsumerProtocolSubscription(version=self.version, topics=sorted(topics), user_data=b"",
                                            owned_partitions=owned, generation_id=self._generation)

    def assign(self, cluster: Any, members: Any) -> dict[str, Any]:
        """Nothing to compute: the coordinator assigns ``server-*`` groups (and names no leader, so this is not
        called by kafka-python; an assignment a member sends in SyncGroup would be ignored)."""
        return {}

    def on_assignment(self, assignment: Any, generation: int) -> None:
        """Remember what this member owns, to report it in the next JoinGroup."""
        self._owned = list(assignment.partitions())
        self._generation = generation
