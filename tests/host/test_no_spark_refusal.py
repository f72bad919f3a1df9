"""``serve --no-spark`` refuses server-side groups at JoinGroup: a real kafka-python consumer using
``ServerSideAssignor`` gets INCONSISTENT_GROUP_PROTOCOL, and the coordinator writes nothing for its group."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from kafka import KafkaConsumer
from kafka.errors import InconsistentGroupProtocolError

from groupcoord.coordinator import decode_record
from groupcoord.coordinator.records import GroupMetadataRecord, OffsetCommitRecord
from groupcoord.log.delta import DeltaRecordLog
from groupcoord.member.kafka_python import ServerSideAssignor
from groupcoord.state_root import StateRoot
from groupcoord.topics.catalog import TopicCatalog
from tests.host.conftest import ServeProcess

pytestmark = pytest.mark.integration

TOPIC = "orders"
GROUP = "billing"


def test_kafka_python_server_side_consumer_is_refused_and_nothing_is_written(
    serve: Callable[..., ServeProcess], tmp_path: Path
) -> None:
    root = StateRoot.open(tmp_path / "root", create=True)
    TopicCatalog(root).create(TOPIC, 3)
    process = serve(root=root.path)
    address = process.wait_ready()
    consumer = KafkaConsumer(TOPIC, group_id=GROUP, bootstrap_servers=f"{address.host}:{address.port}",
                             enable_auto_commit=False, request_timeout_ms=10000,
                             partition_assignment_strategy=[ServerSideAssignor.named("range")])
    try:
        deadline = time.monotonic() + 30
        with pytest.raises(InconsistentGroupProtocolError):
            while time.monotonic() < deadline:
                consumer.poll(timeout_ms=100)
            pytest.fail("the consumer was not refused within 30 s")
        assert consumer.assignment() == set()
    finally:
        consumer.close(autocommit=False)
    assert process.terminate() == 0
    stderr = process.stderr()
    # Refused at JoinGroup by the core, never reaching the shell's refusal of an assignment at SyncGroup.
    assert "need server-side assignment" in stderr and "refusing server-side assignment" not in stderr
    records = [decode_record(r) for r in DeltaRecordLog(root.log_path).load().records]
    assert not [r for r in records if isinstance(r, GroupMetadataRecord | OffsetCommitRecord) and r.group_id == GROUP]
