"""Bad input gives a clear error naming the problem."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from groupcoord.assignors import ASSIGNOR_NAMES, AssignorInputError, get_assignor
from groupcoord.assignors.collect import to_arrow
from tests.assignors.builders import members_df, partitions_df

pytestmark = pytest.mark.spark


def test_unknown_assignor_name_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown assignor 'sticky2'.*range, roundrobin, sticky"):
        get_assignor("sticky2")


def test_unknown_option_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="bad options for assignor 'weighted'"):
        get_assignor("weighted", tolerence=0.1)  # type: ignore[call-arg]  # the misspelling is the test


def test_missing_column_is_named(spark: SparkSession) -> None:
    members = members_df(spark, {"c": ["t"]}).drop("topics")
    with pytest.raises(AssignorInputError, match="members: missing column 'topics'"):
        get_assignor("range").assign(members, partitions_df(spark, {"t": 1}))


def test_wrong_column_type_is_named(spark: SparkSession) -> None:
    partitions = spark.createDataFrame([("t", "0")], "topic string, partition string")
    with pytest.raises(AssignorInputError, match="partitions: column 'partition' has type string"):
        get_assignor("sticky").assign(members_df(spark, {"c": ["t"]}), partitions)


def test_any_integral_partition_type_is_accepted(spark: SparkSession) -> None:
    partitions = spark.createDataFrame([("t", 0), ("t", 1)], "topic string, partition bigint")
    out = get_assignor("range").assign(members_df(spark, {"c": ["t"]}), partitions)
    assert out.schema.simpleString() == "struct<member_id:string,topic:string,partition:int>"
    assert sorted(tuple(r) for r in out.collect()) == [("c", "t", 0), ("c", "t", 1)]


def test_group_id_on_some_inputs_only_is_refused(spark: SparkSession) -> None:
    members = members_df(spark, {"c": ["t"]}).selectExpr("'g' AS group_id", "*")
    with pytest.raises(AssignorInputError, match="group_id must be on all inputs or none"):
        get_assignor("range").assign(members, partitions_df(spark, {"t": 1}))


@pytest.mark.parametrize("name", ASSIGNOR_NAMES)
def test_duplicate_members_fail_when_evaluated(spark: SparkSession, name: str) -> None:
    members = members_df(spark, {"c": ["t"]}).unionByName(members_df(spark, {"c": ["t"]}))
    out = get_assignor(name).assign(members, partitions_df(spark, {"t": 2}))
    with pytest.raises(AssignorInputError, match=r"^duplicate or null member_id c in group ''$"):
        to_arrow(out)


def test_negative_partition_fails_when_evaluated(spark: SparkSession) -> None:
    partitions = spark.createDataFrame([("t", -1)], "topic string, partition int")
    out = get_assignor("sticky").assign(members_df(spark, {"c": ["t"]}), partitions)
    with pytest.raises(AssignorInputError, match=r"^negative or null partition t--1$"):
        to_arrow(out)
