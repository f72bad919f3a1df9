"""Builders for assignor inputs and helpers to read assignments back, shared by the assignor tests."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from pyspark.sql import DataFrame, SparkSession

MEMBERS = "member_id string, group_instance_id string, topics array<string>, rack string"
PARTITIONS = "topic string, partition int, racks array<string>, weight double"
OWNED = "member_id string, topic string, partition int, generation int"
OUTPUT = "member_id string not null, topic string not null, partition int not null"

Assignment = dict[str, list[tuple[str, int]]]


def members_df(spark: SparkSession, subscriptions: Mapping[str, Sequence[str]],
               instance_ids: Mapping[str, str] | None = None, racks: Mapping[str, str] | None = None) -> DataFrame:
    """Members from ``{member_id: topics}``, optionally static (``instance_ids``) and racked."""
    rows = [(m, (instance_ids or {}).get(m), list(t), (racks or {}).get(m)) for m, t in subscriptions.items()]
    return spark.createDataFrame(rows, MEMBERS)


def partitions_df(spark: SparkSession, counts: Mapping[str, int]) -> DataFrame:
    """Partitions ``0..n-1`` of each topic in ``{topic: n}``."""
    rows = [(t, p, None, None) for t, n in counts.items() for p in range(n)]
    return spark.createDataFrame(rows, PARTITIONS)


def expected_df(spark: SparkSession, assignment: Mapping[str, Iterable[tuple[str, int]]]) -> DataFrame:
    """The output frame for ``{member_id: [(topic, partition), ...]}``, sorted like :func:`sorted_output`."""
    rows = sorted((m, t, p) for m, tps in assignment.items() for t, p in tps)
    return spark.createDataFrame(rows, OUTPUT)


def sorted_output(frame: DataFrame) -> DataFrame:
    """``frame`` in a canonical row order, so chispa can compare it exactly."""
    return frame.orderBy(*frame.columns)


def as_dict(frame: DataFrame, *, group: bool = False) -> dict[object, Assignment]:
    """Collect an output frame into ``{group_id or None: {member: sorted [(topic, partition)]}}``."""
    result: dict[object, Assignment] = {}
    for row in frame.collect():
        key = row["group_id"] if group else None
        result.setdefault(key, {}).setdefault(row["member_id"], []).append((row["topic"], row["partition"]))
    for assignment in result.values():
        for parts in assignment.values():
            parts.sort()
    return result
