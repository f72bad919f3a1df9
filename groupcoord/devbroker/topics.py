"""Put data on a Kafka cluster, for tests and benchmarks: create a topic, produce records and learn their offsets.

Topics are created with kafka-python's admin client (a dependency of groupcoord). Records are produced with
confluent-kafka (librdkafka, in the ``dev`` extra), which writes a million records in seconds where kafka-python takes
minutes. A keyed record without a partition lands where the Java client would put it (murmur2 of the key), an unkeyed
one on a random partition.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

CREATE_TIMEOUT_S = 30.0
PRODUCE_TIMEOUT_S = 300.0


class ProduceError(RuntimeError):
    """A record was not acknowledged, or its partition's offsets were not the consecutive run this call expected."""


class Record(NamedTuple):
    """One record to produce: its value, and optionally its key and partition (else the partitioner chooses)."""

    value: bytes | None
    key: bytes | None = None
    partition: int | None = None


def create_topic(bootstrap: str, name: str, partitions: int = 1, *, configs: Mapping[str, str] | None = None,
                 timeout_s: float = CREATE_TIMEOUT_S) -> None:
    """Create topic ``name`` (one replica) and wait until every partition has a leader.

    Raises kafka-python's ``TopicAlreadyExistsError`` when it exists.
    """
    from kafka import KafkaAdminClient

    spec = {"num_partitions": partitions, "replication_factor": 1, "configs": dict(configs or {})}
    with KafkaAdminClient(bootstrap_servers=bootstrap, client_id="groupcoord-dev-broker-admin") as admin:
        admin.create_topics({name: spec}, timeout_ms=int(timeout_s * 1000), wait_for_metadata=True)


def produce(bootstrap: str, topic: str, records: Iterable[Record], *,
            timeout_s: float = PRODUCE_TIMEOUT_S) -> dict[int, range]:
    """Produce ``records`` in order (an idempotent producer, ``acks=all``) and wait for every acknowledgement.

    Returns, for each partition written, the ``range`` of offsets its records got: the n-th record sent to partition
    ``p`` is at offset ``result[p][n]``. That holds because nobody else writes those partitions meanwhile; when
    somebody does, :class:`ProduceError` says so.
    """
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "client.id": "groupcoord-dev-broker-producer",
                         "enable.idempotence": True, "acks": "all", "linger.ms": 5, "partitioner": "murmur2_random"})
    tally = _Tally()
    for record in records:
        partition = -1 if record.partition is None else record.partition  # -1: librdkafka's "unassigned"
        while True:
            try:
                producer.produce(topic, value=record.value, key=record.key, partition=partition,
                                 on_delivery=tally.delivered)
                break
            except BufferError:  # the local queue is full: serve acknowledgements, then retry
                producer.poll(0.1)
        producer.poll(0)  # serve the acknowledgements that arrived
    unacknowledged = producer.flush(timeout_s)
    if unacknowledged:
        raise ProduceError(f"{unacknowledged} records to {topic} unacknowledged after {timeout_s:.0f} s")
    return tally.ranges(topic)


@dataclass
class _PartitionTally:
    count: int = 0
    first: int = -1
    last: int = -1


@dataclass
class _Tally:
    """What the delivery callbacks saw: per partition, how many records and the lowest and highest offset."""

    partitions: dict[int, _PartitionTally] = field(default_factory=dict)
    error: str | None = None

    def delivered(self, error: Any, message: Any) -> None:
        if error is not None:
            self.error = self.error or str(error)
            return
        seen = self.partitions.setdefault(message.partition(), _PartitionTally())
        offset = message.offset()
        seen.first = offset if seen.count == 0 else min(seen.first, offset)
        seen.last = max(seen.last, offset)
        seen.count += 1

    def ranges(self, topic: str) -> dict[int, range]:
        if self.error:
            raise ProduceError(f"producing to {topic} failed: {self.error}")
        result = {p: range(seen.first, seen.last + 1) for p, seen in sorted(self.partitions.items())}
        for p, seen in self.partitions.items():
            if len(result[p]) != seen.count:
                raise ProduceError(f"{topic}-{p}: {seen.count} records got offsets {seen.first}..{seen.last} "
                                   "(another producer wrote to the partition meanwhile)")
        return result
