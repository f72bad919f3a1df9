"""Exact-output tests for ``range`` and ``roundrobin``: the cases of Kafka's RangeAssignorTest and
RoundRobinAssignorTest, rewritten for DataFrames."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality
from pyspark.sql import SparkSession

from groupcoord.assignors import get_assignor
from tests.assignors.builders import expected_df, members_df, partitions_df, sorted_output

pytestmark = pytest.mark.spark


def _check(spark: SparkSession, name: str, subs: dict[str, list[str]], counts: dict[str, int],
           expected: dict[str, list[tuple[str, int]]], instance_ids: dict[str, str] | None = None) -> None:
    out = get_assignor(name).assign(members_df(spark, subs, instance_ids), partitions_df(spark, counts))
    assert_df_equality(sorted_output(out), expected_df(spark, expected))


@pytest.mark.parametrize("name", ["range", "roundrobin"])
def test_one_consumer_no_topic_gets_nothing(spark: SparkSession, name: str) -> None:
    _check(spark, name, {"c": []}, {"t": 3}, {})


@pytest.mark.parametrize("name", ["range", "roundrobin"])
def test_one_consumer_nonexistent_topic_gets_nothing(spark: SparkSession, name: str) -> None:
    _check(spark, name, {"c": ["missing"]}, {"t": 3}, {})


@pytest.mark.parametrize("name", ["range", "roundrobin"])
def test_one_consumer_one_topic_gets_all(spark: SparkSession, name: str) -> None:
    _check(spark, name, {"c": ["t"]}, {"t": 3}, {"c": [("t", 0), ("t", 1), ("t", 2)]})


@pytest.mark.parametrize("name", ["range", "roundrobin"])
def test_only_assigns_partitions_from_subscribed_topics(spark: SparkSession, name: str) -> None:
    _check(spark, name, {"c": ["t"]}, {"t": 3, "other": 3}, {"c": [("t", 0), ("t", 1), ("t", 2)]})


@pytest.mark.parametrize("name", ["range", "roundrobin"])
def test_one_consumer_multiple_topics(spark: SparkSession, name: str) -> None:
    _check(spark, name, {"c": ["t1", "t2"]}, {"t1": 1, "t2": 2}, {"c": [("t1", 0), ("t2", 0), ("t2", 1)]})


@pytest.mark.parametrize("name", ["range", "roundrobin"])
def test_two_consumers_one_topic_one_partition(spark: SparkSession, name: str) -> None:
    _check(spark, name, {"c1": ["t"], "c2": ["t"]}, {"t": 1}, {"c1": [("t", 0)]})


@pytest.mark.parametrize("name", ["range", "roundrobin"])
def test_two_consumers_one_topic_two_partitions(spark: SparkSession, name: str) -> None:
    _check(spark, name, {"c1": ["t"], "c2": ["t"]}, {"t": 2}, {"c1": [("t", 0)], "c2": [("t", 1)]})


@pytest.mark.parametrize("name", ["range", "roundrobin"])
def test_multiple_consumers_mixed_topics(spark: SparkSession, name: str) -> None:
    subs = {"c1": ["t1"], "c2": ["t1", "t2"], "c3": ["t1"]}
    expected = {"c1": [("t1", 0)], "c2": [("t1", 1), ("t2", 0), ("t2", 1)], "c3": [("t1", 2)]}
    _check(spark, name, subs, {"t1": 3, "t2": 2}, expected)


def test_range_two_consumers_two_topics_six_partitions(spark: SparkSession) -> None:
    expected = {"c1": [("t1", 0), ("t1", 1), ("t2", 0), ("t2", 1)], "c2": [("t1", 2), ("t2", 2)]}
    _check(spark, "range", {"c1": ["t1", "t2"], "c2": ["t1", "t2"]}, {"t1": 3, "t2": 3}, expected)


def test_roundrobin_two_consumers_two_topics_six_partitions(spark: SparkSession) -> None:
    expected = {"c1": [("t1", 0), ("t1", 2), ("t2", 1)], "c2": [("t1", 1), ("t2", 0), ("t2", 2)]}
    _check(spark, "roundrobin", {"c1": ["t1", "t2"], "c2": ["t1", "t2"]}, {"t1": 3, "t2": 3}, expected)


def test_range_static_members_come_first_by_instance_id(spark: SparkSession) -> None:
    # "z" is static (instance "i0") so it sorts before the dynamic "a": it takes the first range.
    expected = {"z": [("t", 0), ("t", 1)], "a": [("t", 2)]}
    _check(spark, "range", {"a": ["t"], "z": ["t"]}, {"t": 3}, expected, instance_ids={"z": "i0"})


def test_roundrobin_static_members_keep_their_turn_across_member_id_changes(spark: SparkSession) -> None:
    # As in Kafka's static-member round-robin test: a rejoin with a new member id keeps the instance's place.
    subs = {"m-9": ["t"], "m-1": ["t"], "m-5": ["t"]}
    ids = {"m-9": "i0", "m-1": "i1", "m-5": "i2"}
    expected = {"m-9": [("t", 0), ("t", 3)], "m-1": [("t", 1)], "m-5": [("t", 2)]}
    _check(spark, "roundrobin", subs, {"t": 4}, expected, instance_ids=ids)
