"""The Kafka source against a real Kafka-compatible broker (Tansu on 127.0.0.1): assign+seek reads, the catalog
copy of partition counts, and members ingesting a Kafka topic exactly once into the sink."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import NewTopic
from kafka.structs import TopicPartition

from groupcoord.ingest.catalog_sync import CatalogSync, copy_partition_counts, topic_filter
from groupcoord.ingest.check import check_exactly_once
from groupcoord.ingest.kafka_source import KafkaReader, kafka_partition_counts
from groupcoord.ingest.sink import DeltaSink
from groupcoord.ingest.sources import SourceSpec
from groupcoord.ingest.worker import IngestPlan, IngestWork
from groupcoord.member import GroupMember
from groupcoord.topics import OffsetOutOfRangeError, PartitionOffsets, TopicCatalog
from tests.ingest.test_worker import run_all
from tests.member.conftest import Coordinator

PARTITIONS = 4
PER_PARTITION = 250


def produce(bootstrap: str, topic: str) -> pa.Table:
    """Create ``topic`` and produce ``PER_PARTITION`` records to each partition; return what was produced."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    rows = []
    for partition in range(PARTITIONS):
        for i in range(PER_PARTITION):
            value = f"{topic}-{partition}-{i}".encode()
            meta = producer.send(topic, value=value, key=str(i).encode(), partition=partition).get(10)
            rows.append({"topic": topic, "partition": partition, "offset": meta.offset, "value": value})
    producer.close()
    return pa.Table.from_pylist(rows)


def test_the_reader_seeks_and_reads_bounded_batches_of_assigned_partitions(tansu: str) -> None:
    produced = produce(tansu, "clicks")
    reader = KafkaReader([tansu])
    try:
        tp0, tp3 = TopicPartition("clicks", 0), TopicPartition("clicks", 3)
        everything = PartitionOffsets(0, PER_PARTITION)
        assert reader.bounds([tp0, tp3]) == {tp0: everything, tp3: everything}
        batch = reader.read({tp0: 10, tp3: 0}, 50)
        assert batch[tp0].column("offset").to_pylist() == list(range(10, 60))
        assert batch[tp3].column("offset").to_pylist() == list(range(50))
        values = produced.filter(pc.field("partition") == 0).column("value").to_pylist()
        assert batch[tp0].column("value").to_pylist() == values[10:60]
        assert reader.read({tp0: PER_PARTITION}, 50)[tp0].num_rows == 0
        try:
            reader.read({tp0: PER_PARTITION + 5}, 50)
            raise AssertionError("an offset past the log end must be refused")
        except OffsetOutOfRangeError:
            pass
    finally:
        reader.close()


def test_partition_counts_are_copied_into_the_catalog_and_only_grow(
        tansu: str, coordinator: Callable[..., Coordinator]) -> None:
    produce(tansu, "clicks")
    stack = coordinator({})
    catalog = TopicCatalog(stack.root)
    with CatalogSync(catalog, lambda: kafka_partition_counts([tansu]), wanted=topic_filter(None, "cl.*"),
                     interval_ms=50).start():
        assert catalog.partition_counts() == {"clicks": PARTITIONS}
        admin = KafkaAdminClient(bootstrap_servers=tansu)  # Tansu has no CreatePartitions: a new topic instead
        admin.create_topics([NewTopic("clicks_eu", num_partitions=2, replication_factor=1),
                             NewTopic("orders", num_partitions=3, replication_factor=1)])
        admin.close()
        deadline = time.monotonic() + 10
        while catalog.partition_counts() != {"clicks": PARTITIONS, "clicks_eu": 2}:
            assert time.monotonic() < deadline, "the new topic was not copied"
            time.sleep(0.05)
    shrunk = {"clicks": 1, "clicks_eu": 1, "other": 2}
    assert copy_partition_counts(catalog, shrunk, wanted=topic_filter(("clicks",), None)) == {}
    assert catalog.partition_counts() == {"clicks": PARTITIONS, "clicks_eu": 2}


def test_members_ingest_a_kafka_topic_exactly_once(
        tansu: str, coordinator: Callable[..., Coordinator], members: Callable[..., GroupMember],
        tmp_path: Path) -> None:
    produced = produce(tansu, "clicks")
    stack = coordinator({})
    copy_partition_counts(TopicCatalog(stack.root), kafka_partition_counts([tansu]), wanted=lambda t: True)
    plan = IngestPlan(group_id="ingest", source=SourceSpec.parse(f"kafka://{tansu}", state_root=stack.root),
                      sink=str(tmp_path / "sink"), max_records_per_batch=100, idle_ms=20, done_check_ms=50,
                      targets={("clicks", p): PER_PARTITION for p in range(PARTITIONS)})
    group = [members("ingest", topics=["clicks"], state_root=stack.root.path, group_instance_id=f"k-{i}")
             for i in range(2)]
    run_all([(m, IngestWork(plan)) for m in group])
    result = check_exactly_once(DeltaSink(tmp_path / "sink", "ingest").read_all(), produced)
    assert result.ok, result.summary()
