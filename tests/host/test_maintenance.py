"""The holder's maintenance timer keeps the tables it looks after small, while it keeps serving."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from groupcoord.config import resolve_config
from groupcoord.host.background import BackgroundCoordinator
from groupcoord.log.lease import current_holder
from groupcoord.state_root import StateRoot
from groupcoord.topics import ProducerRecord, TopicCatalog, TopicLog

CONF = {
    "spark.groupcoord.listen": "127.0.0.1:0",
    "spark.groupcoord.log.maintenance.interval.ms": "1000",
}


def test_the_timer_compacts_topic_logs_and_keeps_every_record(tmp_path: Path) -> None:
    root = StateRoot.open(tmp_path / "root", create=True)
    TopicCatalog(root).create("orders", 2)
    topic = TopicLog(root, "orders")
    for batch in range(6):  # one Delta commit, hence one small file at least, per produce
        topic.produce(ProducerRecord(f"v{batch}-{i}".encode(), partition=i % 2) for i in range(10))
    path = str(root.topic_path("orders"))
    assert len(DeltaTable(path).file_uris()) >= 6

    with BackgroundCoordinator(root, resolve_config(spark_conf=CONF)) as coordinator:
        address = coordinator.address
        deadline = time.monotonic() + 30
        while len(DeltaTable(path).file_uris()) > 2:  # at most one file per partition value is left
            assert time.monotonic() < deadline, "the topic log was not compacted"
            time.sleep(0.2)
        holder = current_holder(root)
        assert holder is not None and holder.live and holder.address == address

    assert [topic.log_end_offset(p) for p in range(2)] == [30, 30]
    assert [len(topic.read(p, 0, 100)) for p in range(2)] == [30, 30]


def test_a_failing_maintenance_step_is_retried_and_does_not_stop_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from groupcoord.host import coordinator_host
    from groupcoord.log.maintenance import maintain_record_log as real
    calls: list[int] = []

    async def fails_first(*args: Any, **kwargs: Any) -> Any:
        calls.append(len(calls))
        if len(calls) == 1:
            raise RuntimeError("injected maintenance failure")
        return await real(*args, **kwargs)

    monkeypatch.setattr(coordinator_host, "maintain_record_log", fails_first)
    root = StateRoot.open(tmp_path / "root", create=True)
    TopicCatalog(root).create("orders", 1)
    topic = TopicLog(root, "orders")
    for batch in range(4):
        topic.produce(ProducerRecord(f"v{batch}".encode(), partition=0) for _ in range(5))
    path = str(root.topic_path("orders"))

    with caplog.at_level(logging.ERROR, logger="groupcoord.host"), \
            BackgroundCoordinator(root, resolve_config(spark_conf=CONF)):
        deadline = time.monotonic() + 30
        while len(calls) < 2 or len(DeltaTable(path).file_uris()) > 1:
            assert time.monotonic() < deadline, f"maintenance stopped after {len(calls)} record-log runs"
            time.sleep(0.2)

    assert any("injected maintenance failure" in (r.exc_text or "") for r in caplog.records)
    assert topic.log_end_offset(0) == 20
