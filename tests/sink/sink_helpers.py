"""Helpers of the ``groupcoord-delta`` sink tests: topics on either source, queries, and the exactly-once check.

``Source`` hides where records come from (the state root's embedded topic log, or the session's real Kafka broker);
:func:`assert_exactly_once` compares the sink table with the produced records with chispa and checks that the
group's committed offsets equal the table's app transaction versions.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
from chispa import assert_df_equality
from deltalake import DeltaTable
from pyspark.sql import SparkSession

from groupcoord.admin.describe import committed_offsets
from groupcoord.devbroker import KafkaBroker, Record
from groupcoord.ingest.check import embedded_rows
from groupcoord.ingest.demo_data import create_demo_topic
from groupcoord.state_root import StateRoot
from groupcoord.storage.tables import table_dataset
from groupcoord.topics import ProducerRecord, TopicLog
from groupcoord.topics.app_transactions import transaction_versions
from tests.sink.supervised import SupervisedQuery
from tests.source.source_helpers import FAST_CONF, SOURCE_TIMING

COLUMNS = ["topic", "partition", "offset", "value"]
FAST_MEMBER = {**SOURCE_TIMING, "assignors": "cooperative-sticky"}
"""Member timings short enough for a test to see a dead query's partitions move within seconds; the group's leader
assigns (no Spark job per rebalance)."""


@dataclass
class Source:
    """Where a test's records live: ``broker`` is ``None`` for the embedded topic log."""

    root: StateRoot
    broker: KafkaBroker | None = None
    produced: dict[str, pa.Table] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """``embedded`` or ``kafka`` (for messages)."""
        return "embedded" if self.broker is None else "kafka"

    def create(self, topic: str, *, partitions: int, records: int) -> None:
        """Create ``topic`` with ``records`` records spread round-robin over ``partitions``."""
        if self.broker is None:
            create_demo_topic(self.root, topic, partitions=partitions, records=records)
            return
        self.broker.create_topic(topic, partitions)
        self.produced[topic] = pa.table({c: pa.array([], t) for c, t in
                                         [("topic", pa.string()), ("partition", pa.int64()), ("offset", pa.int64()),
                                          ("value", pa.binary())]})
        self.append(topic, records, partitions=partitions)

    def append(self, topic: str, records: int, *, partitions: int) -> None:
        """Produce ``records`` more records to ``topic``, round-robin over its ``partitions``."""
        values = [(i % partitions, f"{topic}-{uuid.uuid4().hex[:6]}-{i}".encode()) for i in range(records)]
        if self.broker is None:
            TopicLog(self.root, topic).produce(ProducerRecord(v, partition=p) for p, v in values)
            return
        offsets = self.broker.produce(topic, [Record(v, key=str(i).encode(), partition=p)
                                              for i, (p, v) in enumerate(values)])
        seen: dict[int, int] = {}
        rows = []
        for p, value in values:
            index = seen.get(p, 0)
            seen[p] = index + 1
            rows.append({"topic": topic, "partition": p, "offset": offsets[p][index], "value": value})
        self.produced[topic] = pa.concat_tables([self.produced[topic], pa.Table.from_pylist(
            rows, schema=self.produced[topic].schema)])

    def records(self, topic: str) -> pa.Table:
        """Every record of ``topic``: ``topic, partition, offset, value``."""
        if self.broker is None:
            return embedded_rows(self.root, [topic]).select(COLUMNS)
        return self.produced[topic].select(COLUMNS)

    def options(self) -> dict[str, str]:
        """The source options that say where records come from."""
        return {} if self.broker is None else {"kafka.bootstrap.servers": self.broker.bootstrap}


FAST_COORDINATOR = {key: value for key, value in FAST_CONF.items() if key != "spark.groupcoord.listen"}
"""The source tests' coordinator settings: no initial rebalance delay, short backoffs, no planner warm-up."""


def register_root(spark: SparkSession, root: StateRoot) -> None:
    """``groupcoord.spark.register`` the state root: the source, the sink, and its coordinator in this driver, with
    :data:`FAST_COORDINATOR` (set for the registration only)."""
    from groupcoord.spark import register

    for key, value in FAST_COORDINATOR.items():
        spark.conf.set(key, value)
    try:
        register(spark, state_root=str(root.path))
    finally:
        for key in FAST_COORDINATOR:
            spark.conf.unset(key)


def start_query(spark: SparkSession, source: Source, group: str, topic: str, table: Path, checkpoint: Path, *,
                available_now: bool = True, sink_format: str = "groupcoord-delta", name: str | None = None,
                sink_options: Mapping[str, str] | None = None, **options: str) -> SupervisedQuery:
    """``readStream.format("groupcoord")`` of ``topic`` in ``group`` into the sink at ``table`` (``options`` are the
    source's, ``sink_options`` override the sink's), restarted when Spark starved it (see :mod:`supervised`)."""
    reader = spark.readStream.format("groupcoord").option("group.id", group).option("subscribe", topic) \
        .option("startingOffsets", "earliest").option("state.root", str(source.root.path))
    for key, value in {**FAST_MEMBER, **source.options(), **options}.items():
        reader = reader.option(key, value)
    writer = reader.load().select(*COLUMNS).writeStream.format(sink_format)
    sink = {"path": str(table), "group.id": group, "checkpointLocation": str(checkpoint),
            "state.root": str(source.root.path), **(sink_options or {})}
    for key, value in sink.items():
        writer = writer.option(key, value)
    if name is not None:
        writer = writer.queryName(name)
    writer = writer.trigger(availableNow=True) if available_now else writer.trigger(processingTime="200 milliseconds")
    return SupervisedQuery(writer.start)


def sink_rows(table: Path) -> pa.Table:
    """The sink's ``topic, partition, offset, value``."""
    return table_dataset(DeltaTable(str(table))).to_table(columns=COLUMNS)


def versions(table: Path, group: str, partitions: Mapping[tuple[str, int], Any]) -> dict[tuple[str, int], int | None]:
    """The table's app transaction version of each partition."""
    return transaction_versions(DeltaTable(str(table)), group, partitions)


def assert_exactly_once(spark: SparkSession, source: Source, group: str, topic: str, table: Path,
                        timeout_s: float = 15.0) -> None:
    """chispa: the sink holds every record of ``topic`` once; the group's committed offsets equal the table's
    versions, every partition at its log end (the materialized offsets may trail the commit by a moment)."""
    expected = source.records(topic)
    schema = "topic string, partition int, offset long, value binary"
    assert_df_equality(spark.createDataFrame(sink_rows(table).to_pylist(), schema),
                       spark.createDataFrame(expected.to_pylist(), schema), ignore_row_order=True,
                       ignore_nullable=True)
    ends: dict[tuple[str, int], int] = {}
    for row in expected.to_pylist():
        key = (row["topic"], row["partition"])
        ends[key] = max(ends.get(key, 0), row["offset"] + 1)
    deadline = time.monotonic() + timeout_s
    while True:
        committed = {tp: o for tp, o in committed_offsets(source.root, group).items() if tp[0] == topic}
        held = versions(table, group, ends)
        if committed == held == ends or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert committed == held, f"{source.name}: committed offsets {committed} != sink versions {held}"
    assert held == ends, f"{source.name}: sink versions {held} != log ends {ends}"


def unique(name: str) -> str:
    """A topic name of its own (the broker is shared by the session)."""
    return f"{name}-{uuid.uuid4().hex[:8]}"


QUERY_WAIT_S = 240.0
"""How long a test waits for a streaming query to reach a state: bounded only against a hang. A query's first batch
takes seconds on a quiet machine and took more than a minute with both cores busy (issue 26's CPU hog)."""


def wait_until(condition: Any, timeout_s: float, what: str, *, query: SupervisedQuery | None = None) -> None:
    """Poll ``condition()`` every 0.1 s until true, or fail naming ``what``; fail at once if ``query`` (a query that
    should be running) stopped."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if query is not None:
            query.check_alive()
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")
        time.sleep(0.1)
