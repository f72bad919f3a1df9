"""The members engine on a Kafka source, against the session's real Apache Kafka broker (127.0.0.1): the
``groupcoord`` source's reader reused for a member's consecutive bounded reads, the catalog copy of partition counts
(a grown topic and a new one), and members ingesting a Kafka topic exactly once into the sink. The broker is shared
by the test session, so every test uses topics of its own."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from kafka import KafkaAdminClient
from kafka.admin import NewPartitions
from kafka.structs import TopicPartition

from groupcoord.devbroker import KafkaBroker, Record
from groupcoord.ingest.catalog_sync import CatalogSync, topic_filter
from groupcoord.ingest.check import check_exactly_once
from groupcoord.ingest.sources import SourceSpec
from groupcoord.ingest.worker import IngestPlan, IngestWork
from groupcoord.member import GroupMember
from groupcoord.sink.table import SinkTable
from groupcoord.source.log_view import copy_partition_counts
from groupcoord.source.records import RangeReader
from groupcoord.state_root import StateRoot
from groupcoord.topics import PartitionOffsets, TopicCatalog
from tests.ingest.test_worker import run_all
from tests.member.conftest import Coordinator

pytestmark = pytest.mark.kafka

PARTITIONS = 4
PER_PARTITION = 250


def produce(broker: KafkaBroker, topic: str) -> pa.Table:
    """Create ``topic`` and produce ``PER_PARTITION`` records to each partition; return what was produced."""
    broker.create_topic(topic, PARTITIONS)
    values = {(p, i): f"{topic}-{p}-{i}".encode() for p in range(PARTITIONS) for i in range(PER_PARTITION)}
    offsets = broker.produce(topic, [Record(value, key=str(i).encode(), partition=p)
                                     for (p, i), value in values.items()])
    return pa.Table.from_pylist([{"topic": topic, "partition": p, "offset": offsets[p][i], "value": value}
                                 for (p, i), value in values.items()])


def offsets_and_values(reader: RangeReader, tp: TopicPartition, low: int, high: int) -> tuple[list[int], list[bytes]]:
    """The offsets and values of one range read."""
    table = pa.Table.from_batches(list(reader.read(tp.topic, tp.partition, low, high)), schema=reader.schema)
    return table.column("offset").to_pylist(), table.column("value").to_pylist()


def test_one_reader_reads_bounded_ranges_of_several_partitions_one_after_the_other(
        kafka_broker: KafkaBroker, tmp_path: Path) -> None:
    produced = produce(kafka_broker, "reader_clicks")
    source = SourceSpec.parse(f"kafka://{kafka_broker.bootstrap}", state_root=StateRoot.open(tmp_path, create=True))
    tp0, tp3 = TopicPartition("reader_clicks", 0), TopicPartition("reader_clicks", 3)
    view = source.log_view()
    try:
        everything = PartitionOffsets(0, PER_PARTITION)
        assert view.bounds([tp0, tp3]) == {tp0: everything, tp3: everything}
    finally:
        view.close()
    with RangeReader(source.range_read()) as reader:
        offsets, values = offsets_and_values(reader, tp0, 10, 60)
        assert offsets == list(range(10, 60))
        assert values == produced.filter(pc.field("partition") == 0).column("value").to_pylist()[10:60]
        assert offsets_and_values(reader, tp3, 0, 50)[0] == list(range(50))
        assert offsets_and_values(reader, tp0, 5, 8)[0] == [5, 6, 7]  # back to an earlier position of another
        assert offsets_and_values(reader, tp0, PER_PARTITION, PER_PARTITION)[0] == []


def test_consecutive_bounded_reads_reach_the_end_of_every_partition(kafka_broker: KafkaBroker, tmp_path: Path) -> None:
    # What a member does: read from where the last batch ended (kafka-python once stopped fetching a partition here).
    produced = produce(kafka_broker, "batches_clicks")
    positions = {TopicPartition("batches_clicks", p): 0 for p in range(PARTITIONS)}
    values = []
    source = SourceSpec.parse(f"kafka://{kafka_broker.bootstrap}", state_root=str(tmp_path))
    with RangeReader(source.range_read()) as reader:
        for _ in range(20):
            unread = {tp: offset for tp, offset in positions.items() if offset < PER_PARTITION}
            if not unread:
                break
            for tp, offset in unread.items():
                read, got = offsets_and_values(reader, tp, offset, min(offset + 100, PER_PARTITION))
                assert read == list(range(offset, offset + len(read)))
                positions[tp] += len(read)
                values += got
    assert positions == dict.fromkeys(positions, PER_PARTITION)
    assert sorted(values) == sorted(produced.column("value").to_pylist())


def test_partition_counts_are_copied_into_the_catalog_and_only_grow(
        kafka_broker: KafkaBroker, coordinator: Callable[..., Coordinator]) -> None:
    kafka_broker.create_topic("sync_clicks", PARTITIONS)
    stack = coordinator({})
    catalog = TopicCatalog(stack.root)
    source = SourceSpec.parse(f"kafka://{kafka_broker.bootstrap}", state_root=stack.root)
    with CatalogSync(source.log_view(), wanted=topic_filter(None, "sync_cl.*"), interval_ms=50).start():
        assert catalog.partition_counts() == {"sync_clicks": PARTITIONS}
        admin = KafkaAdminClient(bootstrap_servers=kafka_broker.bootstrap)
        admin.create_partitions({"sync_clicks": NewPartitions(total_count=PARTITIONS + 2)})
        admin.close()
        kafka_broker.create_topic("sync_clicks_eu", 2)
        kafka_broker.create_topic("sync_orders", 3)  # not matched by the pattern
        grown = {"sync_clicks": PARTITIONS + 2, "sync_clicks_eu": 2}
        deadline = time.monotonic() + 10
        while catalog.partition_counts() != grown:
            assert time.monotonic() < deadline, f"not copied: {catalog.partition_counts()} != {grown}"
            time.sleep(0.05)
    shrunk = {"sync_clicks": 1, "sync_clicks_eu": 1}
    assert copy_partition_counts(catalog, shrunk) == {}
    assert catalog.partition_counts() == grown


def test_members_ingest_a_kafka_topic_exactly_once(
        kafka_broker: KafkaBroker, coordinator: Callable[..., Coordinator], members: Callable[..., GroupMember],
        tmp_path: Path) -> None:
    produced = produce(kafka_broker, "members_clicks")
    stack = coordinator({})
    source = SourceSpec.parse(f"kafka://{kafka_broker.bootstrap}", state_root=stack.root)
    view = source.log_view()
    try:
        view.sync_catalog(lambda t: t == "members_clicks")
    finally:
        view.close()
    plan = IngestPlan(group_id="ingest", source=source, sink=str(tmp_path / "sink"), max_records_per_batch=100,
                      idle_ms=20, done_check_ms=50,
                      targets={("members_clicks", p): PER_PARTITION for p in range(PARTITIONS)})
    group = [members("ingest", topics=["members_clicks"], state_root=stack.root.path, group_instance_id=f"k-{i}")
             for i in range(2)]
    run_all([(m, IngestWork(plan)) for m in group])
    result = check_exactly_once(SinkTable(tmp_path / "sink", "ingest").read_all(), produced)
    assert result.ok, result.summary()
