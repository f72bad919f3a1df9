"""The ingestion job in local Spark: executor tasks are the members (``run_members``), the sink is checked with
chispa against the produced records (from the embedded log and from the session's real Kafka broker), and a member's
Python worker killed mid-batch loses and duplicates nothing."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from chispa import assert_df_equality
from kafka.structs import TopicPartition
from pyspark import cloudpickle
from pyspark.sql import DataFrame, SparkSession

from groupcoord.config import resolve_config
from groupcoord.devbroker import KafkaBroker
from groupcoord.ingest.config import SINK_SCHEMA, IngestConfig
from groupcoord.ingest.demo_data import create_demo_topic
from groupcoord.ingest.job import run_ingest
from groupcoord.ingest.worker import IngestPlan, IngestWork, MemberIngest
from groupcoord.member import GroupMember
from groupcoord.sink.table import SinkTable
from groupcoord.state.schema import OFFSETS
from groupcoord.state.views import read_view
from groupcoord.state_root import StateRoot
from groupcoord.storage.tables import table_dataset
from groupcoord.topics.log_table import create_topic_log
from tests.ingest.test_kafka_source import PARTITIONS as KAFKA_PARTITIONS
from tests.ingest.test_kafka_source import PER_PARTITION, produce

# The fault-injecting work below travels to the executors by value (the tests package is not importable there).
cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]  # pyspark's copy is unannotated

pytestmark = [pytest.mark.spark, pytest.mark.slow]

PARTITIONS = 6
RECORDS = 3000
MEMBER_OPTIONS: dict[str, Any] = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 300,
                                  "rebalance_timeout_ms": 10000}
KEYS = resolve_config(flags={"group.initial.rebalance.delay.ms": 200, "group.min.session.timeout.ms": 1000})


def produced_frame(spark: SparkSession, root: StateRoot, topic: str) -> DataFrame:
    """The topic log's records in the sink's schema."""
    rows = table_dataset(create_topic_log(root, topic)).to_table()
    table = pa.table({"topic": pa.array([topic] * rows.num_rows, pa.string()),
                      **{name: rows.column(name) for name in SINK_SCHEMA.names[1:]}}).cast(SINK_SCHEMA)
    return spark.createDataFrame(table)


def sink_frame(spark: SparkSession, sink: Path) -> DataFrame:
    """The sink's rows."""
    return spark.createDataFrame(SinkTable(sink, "any").read_all())


def committed_offsets(root: StateRoot, group: str) -> dict[TopicPartition, int]:
    """The group's committed offsets from the materialized offsets table."""
    return {TopicPartition(r["topic"], r["partition"]): r["offset"] for r in read_view(root, OFFSETS).to_pylist()
            if r["group_id"] == group}


def ingest(spark: SparkSession, tmp_path: Path, group: str, *, assignors: tuple[str, ...] = ("cooperative-sticky",),
           **options: Any) -> tuple[StateRoot, Path]:
    """Produce the demo topic into a fresh state root and run the job on it in available-now mode."""
    root = StateRoot.open(tmp_path / "state", create=True)
    create_demo_topic(root, "events", partitions=PARTITIONS, records=RECORDS)
    sink = tmp_path / "sink"
    config = IngestConfig(group_id=group, topics=("events",), pattern=None, source="embedded", sink=str(sink),
                          members=2, available_now=True, max_records_per_batch=200, assignors=assignors)
    run_ingest(spark, config, root, tty=False, progress_interval_s=0.5, config_keys=KEYS,
               **{**MEMBER_OPTIONS, **options})
    return root, sink


def assert_exactly_once(spark: SparkSession, root: StateRoot, sink: Path, group: str) -> None:
    """chispa: the sink equals the produced records; the committed offsets equal the sink's transactions."""
    assert_df_equality(sink_frame(spark, sink), produced_frame(spark, root, "events"), ignore_row_order=True,
                       ignore_nullable=True)
    committed = committed_offsets(root, group)
    assert committed == SinkTable(sink, group).versions(committed)
    assert sorted(committed.values()) == [RECORDS // PARTITIONS] * PARTITIONS


def test_the_job_ingests_the_embedded_log_exactly_once_with_executor_members(
        spark: SparkSession, tmp_path: Path) -> None:
    root, sink = ingest(spark, tmp_path, "e2e")
    assert_exactly_once(spark, root, sink, "e2e")


@pytest.mark.kafka
def test_the_job_ingests_a_kafka_topic_exactly_once_with_executor_members(
        spark: SparkSession, tmp_path: Path, kafka_broker: KafkaBroker) -> None:
    produced = produce(kafka_broker, "job_clicks")
    root = StateRoot.open(tmp_path / "state", create=True)
    sink = tmp_path / "sink"
    config = IngestConfig(group_id="kafka-e2e", topics=("job_clicks",), pattern=None,
                          source=f"kafka://{kafka_broker.bootstrap}",
                          sink=str(sink), members=2, available_now=True, max_records_per_batch=200,
                          assignors=("cooperative-sticky",))
    run_ingest(spark, config, root, tty=False, progress_interval_s=0.5, config_keys=KEYS, **MEMBER_OPTIONS)

    columns = ["topic", "partition", "offset", "value"]
    expected = spark.createDataFrame(produced.select(columns)).selectExpr(
        "topic", "cast(partition as int) as partition", "offset", "value")
    assert_df_equality(sink_frame(spark, sink).select(columns), expected, ignore_row_order=True,
                       ignore_nullable=True)
    committed = committed_offsets(root, "kafka-e2e")
    assert committed == SinkTable(sink, "kafka-e2e").versions(committed)
    assert sorted(committed.values()) == [PER_PARTITION] * KAFKA_PARTITIONS


class KillingIngest(MemberIngest):
    """Kills its own Python worker once (marker file): after the sink commit, before the offset commit."""

    marker: str = ""

    def _commit(self, offsets: Any) -> bool:
        if self.batches >= 2 and not os.path.exists(self.marker):
            Path(self.marker).touch()
            os._exit(1)  # the executor's Python worker dies mid-batch; Spark retries the task
        return super()._commit(offsets)


class KillOnceWork(IngestWork):
    """Member 0's work dies once mid-batch (see :class:`KillingIngest`)."""

    marker = ""

    def __call__(self, member: GroupMember, assignment: Any) -> bool:
        if self._state is None and (member.config.group_instance_id or "").endswith("-0"):
            state = KillingIngest(self.plan, member)
            state.marker = self.marker
            self._state = state
        return super().__call__(member, assignment)


@pytest.mark.faults  # a kill: make test-faults runs it (CI, after make test)
def test_a_member_killed_mid_batch_is_retried_and_every_record_lands_exactly_once(
        spark: SparkSession, tmp_path: Path) -> None:
    marker = tmp_path / "killed"

    def killing_work(plan: IngestPlan) -> IngestWork:
        work = KillOnceWork(plan)
        work.marker = str(marker)
        return work

    root, sink = ingest(spark, tmp_path, "killed", work_type=killing_work)
    assert marker.exists(), "the member task was killed"
    assert_exactly_once(spark, root, sink, "killed")
