"""Builders for assignor inputs and helpers to read assignments back, shared by the assignor tests."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from pyspark.sql import DataFrame, SparkSession

from groupcoord.assignors.frames import MEMBER_SCHEMA, OWNED_SCHEMA, PARTITION_SCHEMA, local_frame

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


def two_group_batch(spark: SparkSession) -> tuple[DataFrame, DataFrame, DataFrame]:
    """Two groups with racks, weights, static members and claims (a conflict, a stale generation, a departed
    member); group ``h`` is heterogeneous (``c`` subscribes to one topic of two), ``g`` homogeneous. Built through
    Arrow, as the coordinator builds them: driver-local frames whose size the optimiser knows."""
    h_topics = {"a": ["t1", "t2"], "b": ["t1", "t2"], "c": ["t1"]}
    members: list[tuple[str, str, str | None, list[str], str | None]] = [
        ("h", m, "static-" + m if m == "b" else None, topics, "r1" if m != "c" else "r2")
        for m, topics in h_topics.items()]
    members += [("g", m, None, ["t1"], None) for m in ("x", "y")]
    partitions: list[tuple[str, str, int, list[str] | None, float | None]] = [
        ("h", t, p, ["r2"] if p % 2 else ["r1"], 1.0 + p) for t, n in (("t1", 5), ("t2", 4)) for p in range(n)]
    partitions += [("g", "t1", p, None, None) for p in range(3)]
    owned = [("h", "a", "t1", p, 4) for p in range(5)] + [("h", "b", "t1", 0, 4), ("h", "c", "t2", 1, 3),
                                                          ("h", "gone", "t2", 2, 4), ("g", "x", "t1", 0, 1)]
    return (local_frame(spark, members, MEMBER_SCHEMA), local_frame(spark, partitions, PARTITION_SCHEMA),
            local_frame(spark, owned, OWNED_SCHEMA))
