"""``groupcoord-delta`` in local Spark, on the embedded topic log and on the session's Kafka broker: every record
once in the table (chispa) and the group's committed offsets equal to the table's versions, for one query, two
queries of one group sharing a topic and a table with a hand-over, and AvailableNow across a group. (``source``,
the parametrized fixture of both sources, is in ``conftest.py``.)"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from deltalake import DeltaTable
from pyspark.sql import SparkSession

from tests.sink.sink_helpers import (
    QUERY_WAIT_S,
    Source,
    assert_exactly_once,
    sink_rows,
    start_query,
    unique,
    wait_until,
)

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_one_query_available_now_writes_every_record_once(spark: SparkSession, source: Source,
                                                          tmp_path: Path) -> None:
    topic = unique("orders")
    source.create(topic, partitions=4, records=2000)
    query = start_query(spark, source, "one", topic, tmp_path / "table", tmp_path / "ckpt",
                        maxOffsetsPerTrigger="600")
    query.awaitTermination(120)
    assert query.exception() is None
    assert len(query.recentProgress) >= 3  # several batches, each one Delta commit and one group commit
    assert_exactly_once(spark, source, "one", topic, tmp_path / "table")


def test_two_queries_share_a_topic_and_a_table_and_one_hands_over(spark: SparkSession, source: Source,
                                                                  tmp_path: Path) -> None:
    """q1 reads alone, q2 joins (the partitions split) and reads, q1 stops (its partitions move to q2), q2 reads
    what arrives after that on every partition; every record lands once in the one table both write.

    The test waits on state, never on speed: records keep arriving until q2 has read some (so a q1 that drained the
    topic before q2 joined cannot starve q2), and the records produced after q1 stopped include q1's partitions, so
    the table is complete only once q2 took them over."""
    topic, table = unique("clicks"), tmp_path / "table"
    source.create(topic, partitions=6, records=1200)
    first = start_query(spark, source, "pair", topic, table, tmp_path / "ckpt1", available_now=False,
                        maxOffsetsPerTrigger="300")
    # the sink creates the table directory a moment before its first commit: reading it then fails ("No files in log
    # segment"), so wait for a table, not for a directory
    wait_until(lambda: DeltaTable.is_deltatable(str(table)) and sink_rows(table).num_rows >= 300, QUERY_WAIT_S,
               "q1's first batches", query=first)
    second = start_query(spark, source, "pair", topic, table, tmp_path / "ckpt2", available_now=False,
                         maxOffsetsPerTrigger="300")
    produced = 1200
    deadline = time.monotonic() + 120
    while not any(p["numInputRows"] for p in second.recentProgress):
        # A query Spark failed with "Python worker failed to connect back" (a loaded machine) starts again here.
        second.check_alive()
        assert time.monotonic() < deadline, "q2 read nothing in 120 s while records kept arriving"
        source.append(topic, 60, partitions=6)
        produced += 60
        time.sleep(1)
    first.stop()
    source.append(topic, 600, partitions=6)
    produced += 600
    wait_until(lambda: sink_rows(table).num_rows >= produced, QUERY_WAIT_S,
               "q2 to take over q1's partitions and finish", query=second)
    second.stop()
    assert first.exception() is None and second.exception() is None
    assert_exactly_once(spark, source, "pair", topic, table)


def test_available_now_across_a_group_the_last_query_leaves_nothing_unread(spark: SparkSession, source: Source,
                                                                           tmp_path: Path) -> None:
    """q1 records its ends, more records arrive, q2 records the later ends; q1 finishes first and leaves, and q2,
    the last, reads every partition up to the ends it recorded, the partitions it took over from q1 included."""
    topic, table = unique("events"), tmp_path / "table"
    source.create(topic, partitions=6, records=1800)
    first = start_query(spark, source, "avail", topic, table, tmp_path / "ckpt1", maxOffsetsPerTrigger="1200")
    wait_until(lambda: bool(first.recentProgress), QUERY_WAIT_S,
               "q1's first batch (its targets are recorded before it)")
    source.append(topic, 1200, partitions=6)
    second = start_query(spark, source, "avail", topic, table, tmp_path / "ckpt2", maxOffsetsPerTrigger="150")
    first.awaitTermination(120)
    assert second.isActive, "q1 finishes first"
    second.awaitTermination(120)
    assert first.exception() is None and second.exception() is None
    assert_exactly_once(spark, source, "avail", topic, table)

