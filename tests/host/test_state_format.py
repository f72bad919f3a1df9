"""Loading committed format-1 state roots, migrating them to the current format, and refusing a newer format.

``state_format1`` is the first release's record log alone; ``state_format1_full`` is every table release 0.1.0
writes (record log, lease, catalog, topic logs, materialized offsets), written by that release's code. A root of
format 2 is that fixture migrated by format 2's step alone; formats 3 (consumer-group record kinds) and 4 (classic
members in consumer groups, an optional field of a member record) must load it unchanged.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from groupcoord.coordinator import CoordinatorConfig, GroupCoordinator
from groupcoord.coordinator.consumer_records import ConsumerMemberMetadataRecord
from groupcoord.coordinator.encoded import EncodedRecord
from groupcoord.coordinator.records import decode_record
from groupcoord.log.delta import DeltaRecordLog
from groupcoord.protocol.requests import OffsetFetchRequest
from groupcoord.protocol.responses import OffsetFetchResponse
from groupcoord.state.schema import OFFSETS
from groupcoord.state.views import read_view
from groupcoord.state_format import FORMAT2_TOPIC_LOG_COLUMNS, STEPS
from groupcoord.state_root import STATE_FORMAT_VERSION, StateRoot, StateRootError
from groupcoord.storage.tables import open_if_exists
from groupcoord.topics import ProducerRecord, TopicCatalog, TopicLog
from groupcoord.topics.log_table import CREATE_TIME, TOPIC_LOG_SCHEMA
from tests.host.conftest import ServeProcess
from tests.narrowing import expect

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "state_format1"
FULL_FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "state_format1_full"


@pytest.fixture
def format1_root(tmp_path: Path) -> Path:
    """A private copy of the committed fixture (loading must not depend on writing to it)."""
    copy = tmp_path / "root"
    shutil.copytree(FIXTURE, copy)
    return copy


@pytest.fixture
def full_format1_root(tmp_path: Path) -> Path:
    """A private copy of release 0.1.0's full state root."""
    copy = tmp_path / "full"
    shutil.copytree(FULL_FIXTURE, copy)
    return copy


def _marker_format(root: Path) -> int:
    found = json.loads((root / "_groupcoord" / "format.json").read_text())["format"]
    assert isinstance(found, int)
    return found


def test_committed_format1_root_loads_with_its_offsets(format1_root: Path) -> None:
    root = StateRoot.open(format1_root)
    loaded = DeltaRecordLog(root.log_path).load()
    core = GroupCoordinator(CoordinatorConfig())
    for record in loaded.records:
        core.replay(decode_record(record))
    assert loaded.epoch == 1
    offsets = {}
    for group in ("g1", "g2"):
        result = core.handle(OffsetFetchRequest(group_id=group, topics=None), 1_700_000_001_000, 0)
        (( _, response),) = result.responses
        for topic in expect(response, OffsetFetchResponse).topics:
            for partition in topic.partitions:
                offsets[(group, topic.name, partition.partition)] = partition.offset
    assert offsets == {("g1", "orders", 0): 10, ("g1", "orders", 1): 20, ("g2", "clicks", 0): 5}


def test_a_newer_format_is_refused_with_a_clear_message(format1_root: Path) -> None:
    marker = format1_root / "_groupcoord" / "format.json"
    marker.write_text(json.dumps({"format": STATE_FORMAT_VERSION + 1}))
    with pytest.raises(StateRootError, match=r"has format 7, newer than this groupcoord supports \(6\)"):
        StateRoot.open(format1_root)


def test_release_0_1_0_root_migrates_and_keeps_every_record(full_format1_root: Path) -> None:
    assert _marker_format(full_format1_root) == 1
    root = StateRoot.open(full_format1_root)
    assert _marker_format(full_format1_root) == STATE_FORMAT_VERSION == root.format_version == 6
    for topic in ("orders", "clicks"):
        table = open_if_exists(root.topic_path(topic))
        assert table is not None
        assert table.schema().to_arrow().names == TOPIC_LOG_SCHEMA.names
        assert (table.protocol().min_reader_version, table.protocol().min_writer_version) == (1, 2)
    catalog = TopicCatalog(root)
    assert catalog.partition_counts() == {"orders": 2, "clicks": 1}
    orders = TopicLog(root, "orders", catalog=catalog)
    assert orders.end_offsets() == {0: 3, 1: 1}
    old = orders.read_records(0, 0)
    assert [(r.offset, r.key, r.value) for r in old] == [(0, b"k0", b"o-0"), (1, None, b"o-1"), (2, b"k3", b"o-3")]
    assert {(r.headers, r.timestamp_type, r.compression) for r in old} == {((), CREATE_TIME, "none")}
    assert orders.read_records(1, 0)[0].value is None

    orders.produce([ProducerRecord(b"new", key=b"k", partition=1, headers=(("trace", b"1"),))])
    (added,) = orders.read_records(1, 1)
    assert (added.offset, added.value, added.headers) == (1, b"new", (("trace", b"1"),))

    loaded = DeltaRecordLog(root.log_path).load()
    assert loaded.epoch == 1
    offsets = read_view(root, OFFSETS).to_pylist()
    assert {(r["group_id"], r["topic"], r["partition"]): r["offset"] for r in offsets} == {
        ("g1", "orders", 0): 2, ("g1", "orders", 1): 1, ("g2", "clicks", 0): 1}


def test_migrating_twice_changes_nothing(full_format1_root: Path) -> None:
    StateRoot.open(full_format1_root)
    version = open_if_exists(full_format1_root / "topics" / "orders")
    assert version is not None
    before = version.version()
    marker = full_format1_root / "_groupcoord" / "format.json"
    marker.write_text(json.dumps({"format": 1}))  # as if the process died between the tables and the marker
    StateRoot.open(full_format1_root)
    after = open_if_exists(full_format1_root / "topics" / "orders")
    assert after is not None and after.version() == before
    assert _marker_format(full_format1_root) == STATE_FORMAT_VERSION
    assert set(FORMAT2_TOPIC_LOG_COLUMNS.names) <= set(after.schema().to_arrow().names)


def _files(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` but the format marker, by relative path, with its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != "format.json"}


@pytest.mark.parametrize("found", [2, 3, 4])
def test_a_format2_3_or_4_root_loads_unchanged(full_format1_root: Path, found: int) -> None:
    """Formats 3, 4 and 5 add only record kinds (consumer groups, users' credentials) and an optional field of one
    of them (classic members in consumer groups) to the record log's rows: a format-2, 3 or 4 root (release 0.1.0's,
    migrated by the steps before) opens without a byte of any table changing, its marker then says 5, and its record
    log replays as before."""
    STEPS[2](full_format1_root)
    (full_format1_root / "_groupcoord" / "format.json").write_text(json.dumps({"format": found}))
    before = _files(full_format1_root)
    root = StateRoot.open(full_format1_root)
    assert _marker_format(full_format1_root) == root.format_version == 6
    assert _files(full_format1_root) == before
    core = GroupCoordinator(CoordinatorConfig())
    for record in DeltaRecordLog(root.log_path).load().records:
        core.replay(decode_record(record))
    assert {(g, t, p): v.offset for g, t, p, v in core.hard_state().offsets} == {
        ("g1", "orders", 0): 2, ("g1", "orders", 1): 1, ("g2", "clicks", 0): 1}
    assert core.hard_state().consumer_groups == ()


FORMAT3_MEMBER = EncodedRecord(
    "consumer_group_member_metadata", '["g","m"]',
    b'{"instance_id":null,"rack_id":null,"client_id":"c","client_host":"/127.0.0.1",'
    b'"subscribed_topic_names":["orders"],"subscribed_topic_regex":"","server_assignor":null,'
    b'"rebalance_timeout_ms":30000}')
"""A consumer group member's metadata as format 3 wrote it (before classic members in consumer groups)."""


def test_a_format3_member_record_reads_as_a_consumer_protocol_member() -> None:
    """A member record of format 3 has no ``classic_member_metadata``: it is a member of the consumer protocol."""
    record = decode_record(FORMAT3_MEMBER)
    assert isinstance(record, ConsumerMemberMetadataRecord) and record.value is not None
    assert record.value.classic is None and record.value.subscribed_topic_names == ("orders",)


@pytest.mark.integration
def test_a_release_0_1_0_root_serves_its_records_offsets_and_new_produce(
    full_format1_root: Path, serve: Callable[..., ServeProcess]
) -> None:
    address = serve(root=full_format1_root).wait_ready()
    assert _marker_format(full_format1_root) == STATE_FORMAT_VERSION
    bootstrap = f"{address.host}:{address.port}"
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    sent = producer.send("orders", b"after", key=b"k4", partition=0, headers=[("trace", b"t")]).get(timeout=15)
    producer.close()
    assert sent.offset == 3
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id="g1", enable_auto_commit=False,
                             consumer_timeout_ms=5000, request_timeout_ms=10000)
    partition = TopicPartition("orders", 0)
    consumer.assign([partition])
    assert consumer.committed(partition) == 2
    consumer.seek_to_beginning(partition)
    got = [record for batch in consumer.poll(timeout_ms=5000).values() for record in batch]
    consumer.close()
    assert [(r.offset, r.key, r.value, list(r.headers)) for r in got] == [
        (0, b"k0", b"o-0", []), (1, None, b"o-1", []), (2, b"k3", b"o-3", []), (3, b"k4", b"after", [("trace", b"t")])]
    assert [r.timestamp for r in got[:3]] == [1_793_534_400_000, 1_793_534_401_000, 1_793_534_403_000]
