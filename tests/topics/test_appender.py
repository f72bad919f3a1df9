"""Produce's group commit: concurrent batches share Delta commits, keep their order, and are deduplicated."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from deltalake import DeltaTable

from groupcoord.state_root import StateRoot
from groupcoord.topics import ProducerRecord, TopicCatalog, TopicLog, TopicsConfig, UnknownTopicOrPartitionError
from groupcoord.topics.appender import TopicAppender, after_results
from groupcoord.topics.log_table import CREATE_TIME
from groupcoord.topics.producer_state import ProducerBatch


def _batch(name: str, n: int) -> list[ProducerRecord]:
    return [ProducerRecord(f"{name}-{i}".encode()) for i in range(n)]


@pytest.fixture
def appender(catalog: TopicCatalog) -> Iterator[TopicAppender]:
    catalog.create("events", 2)
    config = TopicsConfig(commit_backoff_ms=1, produce_linger_ms=50)
    appender = TopicAppender(catalog.root, catalog=TopicCatalog(catalog.root, config=config), config=config)
    yield appender
    appender.close()


def _history(root: StateRoot) -> int:
    return len(DeltaTable(str(root.topic_path("events"))).history())


def test_batches_waiting_together_share_one_commit_in_arrival_order(appender: TopicAppender, root: StateRoot) -> None:
    before = _history(root)
    futures = [appender.append("events", n % 2, _batch(f"b{n}", 3)) for n in range(6)]
    results = [f.result(30) for f in futures]
    assert appender.stats.commits == 1 and appender.stats.batches == 6
    assert _history(root) == before + 1
    assert [r.base_offset for r in results] == [0, 0, 3, 3, 6, 6]
    values = [r.value for r in TopicLog(root, "events").read_records(0, 0)]
    assert values == [f"b{n}-{i}".encode() for n in (0, 2, 4) for i in range(3)]


def test_concurrent_producers_lose_and_reorder_nothing(appender: TopicAppender, root: StateRoot) -> None:
    def produce(name: str) -> None:
        for batch in range(10):
            appender.append("events", 0, _batch(f"{name}.{batch}", 4)).result(60)

    threads = [threading.Thread(target=produce, args=(f"p{n}",)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    values = [r.value.decode() for r in TopicLog(root, "events").read_records(0, 0, 1000) if r.value is not None]
    assert len(values) == 6 * 10 * 4
    for n in range(6):  # each producer's records in its order, each batch contiguous
        mine = [v for v in values if v.startswith(f"p{n}.")]
        assert mine == [f"p{n}.{b}-{i}" for b in range(10) for i in range(4)]
        starts = [values.index(f"p{n}.{b}-0") for b in range(10)]
        assert all(values[s:s + 4] == [f"p{n}.{b}-{i}" for i in range(4)] for b, s in enumerate(starts))
    assert appender.stats.commits < 60  # batches waiting on the same commit shared one


def test_an_unknown_partition_fails_at_once_without_a_commit(appender: TopicAppender, root: StateRoot) -> None:
    before = _history(root)
    with pytest.raises(UnknownTopicOrPartitionError):
        appender.append("events", 2, _batch("x", 1)).result(5)
    with pytest.raises(UnknownTopicOrPartitionError):
        appender.append("missing", 0, _batch("x", 1)).result(5)
    assert _history(root) == before and appender.stats.commits == 0


def test_a_partition_added_after_the_appender_knew_the_topic_is_accepted(appender: TopicAppender,
                                                                       catalog: TopicCatalog, root: StateRoot) -> None:
    appender.append("events", 1, _batch("before", 1)).result(30)  # the appender now knows 2 partitions
    with pytest.raises(UnknownTopicOrPartitionError):
        appender.append("events", 2, _batch("x", 1)).result(5)
    catalog.alter("events", 3)  # by another writer of the catalog
    assert appender.append("events", 2, _batch("after", 1)).result(30).base_offset == 0
    assert [r.value for r in TopicLog(root, "events").read_records(2, 0)] == [b"after-0"]


def test_a_retried_idempotent_batch_is_acknowledged_with_its_first_offset(appender: TopicAppender,
                                                                         root: StateRoot) -> None:
    appender.append("events", 1, _batch("a", 2), producer=ProducerBatch(5, 0, 0, 2)).result(30)
    first = appender.append("events", 1, _batch("b", 2), producer=ProducerBatch(5, 0, 2, 2)).result(30)
    retry = appender.append("events", 1, _batch("b", 2), producer=ProducerBatch(5, 0, 2, 2)).result(30)
    assert (first.base_offset, first.duplicate) == (2, False)
    assert (retry.base_offset, retry.duplicate) == (2, True)
    assert TopicLog(root, "events").log_end_offset(1) == 4


def test_every_field_is_kept(appender: TopicAppender, root: StateRoot) -> None:
    when = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    record = ProducerRecord(b"v", key=b"k", timestamp=when, headers=(("a", b"1"), ("a", None), ("b", b"")),
                            timestamp_type=CREATE_TIME, compression="zstd")
    appender.append("events", 0, [record]).result(30)
    (read,) = TopicLog(root, "events").read_records(0, 0)
    assert (read.key, read.value, read.timestamp, read.headers, read.timestamp_type, read.compression) == (
        b"k", b"v", when, (("a", b"1"), ("a", None), ("b", b"")), CREATE_TIME, "zstd")


def test_calls_after_results_run_once_every_future_of_the_commit_is_resolved(appender: TopicAppender) -> None:
    futures = [appender.append("events", n % 2, _batch(f"b{n}", 1)) for n in range(4)]  # one commit (50 ms linger)
    resolved_when_called: list[int] = []
    called = threading.Event()

    def count_resolved() -> None:
        resolved_when_called.append(sum(future.done() for future in futures))
        if len(resolved_when_called) == len(futures):
            called.set()

    for future in futures:
        future.add_done_callback(lambda _: after_results(count_resolved))
    assert [future.result(30).base_offset for future in futures] == [0, 0, 1, 1]
    assert called.wait(30)
    assert appender.stats.commits == 1
    assert resolved_when_called == [4, 4, 4, 4]  # each call waited for the whole commit's results


def test_a_call_after_results_outside_a_commit_runs_at_once() -> None:
    calls: list[int] = []
    after_results(lambda: calls.append(1))
    assert calls == [1]
