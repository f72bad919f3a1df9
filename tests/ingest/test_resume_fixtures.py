"""A sink table written by either engine's earlier code goes on being written without a duplicate or a gap.

``tests/fixtures/ingest_sinks/`` holds, for each engine of ``jobs/streaming_ingest.py``, a state root and the sink
table its code wrote before the two engines shared one writer and one reader (made by
``tests/fixtures/make_ingest_sinks.py``: 100 records in each of partitions 0-3 of ``events``, app transactions
``fixture-<engine>/events/<p>`` at 100, nothing yet in partition 4). Each is resumed by each engine with today's
code, after two changes to a copy of it:

- 30 more records in every partition, so partition 4's first write comes from today's code;
- partition 0's committed offset moved back from 100 to 60, as a crash between a sink commit and its offset commit
  leaves it: records 60..99 are in the table already and must not be written again.

The resumed table then holds every record of the topic once (and nothing else), and the table's versions and the
group's committed offsets are the log ends.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kafka.structs import TopicPartition
from pyspark.sql import SparkSession

from groupcoord.admin.describe import committed_offsets
from groupcoord.admin.wire import AdminClient
from groupcoord.config import resolve_config
from groupcoord.host.background import BackgroundCoordinator
from groupcoord.ingest.check import check_exactly_once, embedded_rows
from groupcoord.ingest.config import IngestConfig
from groupcoord.ingest.sources import SourceSpec
from groupcoord.ingest.structured import run_structured
from groupcoord.ingest.worker import IngestPlan, IngestWork
from groupcoord.member import GroupMember
from groupcoord.protocol.errors import Errors
from groupcoord.sink.table import SinkTable
from groupcoord.state_root import StateRoot
from groupcoord.topics import ProducerRecord, TopicLog
from tests.ingest.test_worker import run_all
from tests.member.conftest import FAST_OPTIONS
from tests.sink.sink_helpers import FAST_COORDINATOR
from tests.source.source_helpers import FAST_CONF

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ingest_sinks"
TOPIC = "events"
PARTITIONS = 5
MORE = 30
SET_BACK = 60
COLUMNS = ("topic", "partition", "offset", "value")


@dataclass(frozen=True)
class Resumed:
    """A copy of one engine's fixture, ready to resume: its state root, its sink table and its group."""

    engine: str
    root: StateRoot
    sink: Path

    @property
    def group(self) -> str:
        """The group that wrote the table."""
        return f"fixture-{self.engine}"


@pytest.fixture(params=["members", "structured"])
def fixture_table(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Resumed:
    """A copy of the fixture written by the ``request.param`` engine, with more records and partition 0 set back."""
    copy = tmp_path / request.param
    shutil.copytree(FIXTURES / request.param, copy)
    monkeypatch.setenv("GROUPCOORD_STREAMING_FENCES_DIR", str(tmp_path / "fences"))
    resumed = Resumed(request.param, StateRoot.open(copy / "state"), copy / "sink")
    held = SinkTable(resumed.sink, resumed.group).versions(TopicPartition(TOPIC, p) for p in range(PARTITIONS))
    assert list(held.values()) == [100, 100, 100, 100, None], "the fixture as make_ingest_sinks.py writes it"
    TopicLog(resumed.root, TOPIC).produce(ProducerRecord(f"more-{p}-{i}".encode(), partition=p)
                                          for i in range(MORE) for p in range(PARTITIONS))
    with BackgroundCoordinator(resumed.root, resolve_config(spark_conf=FAST_CONF)) as coordinator, \
            AdminClient(str(coordinator.address), timeout_ms=10_000) as admin:
        assert admin.commit_offsets(resumed.group, {(TOPIC, 0): SET_BACK}) == {(TOPIC, 0): Errors.NONE}
    return resumed


def assert_resumed(resumed: Resumed, timeout_s: float = 15.0) -> None:
    """Every record of the topic once in the table; versions and committed offsets at the log ends."""
    sink = SinkTable(resumed.sink, resumed.group)
    result = check_exactly_once(sink.read_all(COLUMNS), embedded_rows(resumed.root, [TOPIC]))
    assert result.ok, f"{resumed.engine}'s table: {result.summary()}"
    ends = {(TOPIC, p): end for p, end in TopicLog(resumed.root, TOPIC).end_offsets().items()}
    assert ends == {(TOPIC, p): (130 if p < 4 else MORE) for p in range(PARTITIONS)}
    versions = {(tp.topic, tp.partition): v for tp, v in sink.versions(TopicPartition(*key) for key in ends).items()}
    assert versions == ends
    deadline = time.monotonic() + timeout_s
    while (committed := committed_offsets(resumed.root, resumed.group)) != ends and time.monotonic() < deadline:
        time.sleep(0.2)  # the materialized offsets trail the commit by a moment
    assert committed == ends


def test_the_members_engine_resumes_a_table_either_engine_wrote(fixture_table: Resumed) -> None:
    ends = TopicLog(fixture_table.root, TOPIC).end_offsets()
    plan = IngestPlan(group_id=fixture_table.group, source=SourceSpec(str(fixture_table.root.path)),
                      sink=str(fixture_table.sink), max_records_per_batch=25, idle_ms=20, done_check_ms=50,
                      targets={(TOPIC, p): end for p, end in ends.items()})
    with BackgroundCoordinator(fixture_table.root, resolve_config(spark_conf=FAST_CONF)):
        group = [GroupMember(fixture_table.group, topics=[TOPIC], state_root=fixture_table.root.path,
                             group_instance_id=f"resume-{i}", assignors=("cooperative-sticky",),
                             session_timeout_ms=1500, heartbeat_interval_ms=100, rebalance_timeout_ms=3000,
                             options=FAST_OPTIONS) for i in range(2)]
        run_all([(member, IngestWork(plan)) for member in group])
    assert_resumed(fixture_table)


@pytest.fixture
def fast_registration(spark: SparkSession) -> Iterator[None]:
    """The source tests' coordinator settings, in the session while the job registers."""
    for key, value in FAST_COORDINATOR.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key in FAST_COORDINATOR:
            spark.conf.unset(key)


@pytest.mark.spark
@pytest.mark.slow
def test_the_structured_engine_resumes_a_table_either_engine_wrote(
        fixture_table: Resumed, spark: SparkSession, fast_registration: None) -> None:
    config = IngestConfig(group_id=fixture_table.group, topics=(TOPIC,), pattern=None, source="embedded",
                          sink=str(fixture_table.sink), members=2, available_now=True, max_records_per_batch=25,
                          assignors=("cooperative-sticky",))
    run_structured(spark, config, fixture_table.root, progress_interval_s=0.5, tty=False)
    assert_resumed(fixture_table)
