"""Assigning N groups in one call gives the same result as N separate calls."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from groupcoord.assignors import ASSIGNOR_NAMES, get_assignor
from tests.assignors.builders import OWNED, members_df, partitions_df, sorted_output

pytestmark = [pytest.mark.spark, pytest.mark.slow]

GROUPS = {
    "a": ({"c1": ["t1", "t2"], "c2": ["t1", "t2"], "c3": ["t1", "t2"]}, {"t1": 4, "t2": 3}, [("c1", "t1", 0, 2)]),
    "b": ({"x": ["t1"], "y": ["t1", "t2"]}, {"t1": 5, "t2": 2}, [("y", "t1", 1, 1), ("x", "t1", 1, 1)]),
    "c": ({"solo": ["t3"]}, {"t3": 2, "t1": 1}, []),
}


@pytest.mark.parametrize("name", ASSIGNOR_NAMES)
def test_one_batched_call_equals_separate_calls(spark: SparkSession, name: str) -> None:
    assignor = get_assignor(name)
    separate = set()
    members_all, partitions_all, owned_all = [], [], []
    for gid, (subs, counts, owned) in GROUPS.items():
        m, p = members_df(spark, subs), partitions_df(spark, counts)
        o = spark.createDataFrame(owned, OWNED)
        separate |= {(gid, *row) for row in sorted_output(assignor.assign(m, p, o)).collect()}
        members_all.append(m.select(F.lit(gid).alias("group_id"), "*"))
        partitions_all.append(p.select(F.lit(gid).alias("group_id"), "*"))
        owned_all.append(o.select(F.lit(gid).alias("group_id"), "*"))

    def union(frames: list) -> object:  # type: ignore[type-arg]
        out = frames[0]
        for frame in frames[1:]:
            out = out.unionByName(frame)
        return out

    batched = assignor.assign(union(members_all), union(partitions_all), union(owned_all))  # type: ignore[arg-type]
    assert batched.columns == ["group_id", "member_id", "topic", "partition"]
    assert {tuple(row) for row in batched.collect()} == separate
    # A frame derived from the result is planned again, under the session's own settings: same rows.
    assert {tuple(row) for row in batched.where("partition >= 0").orderBy("group_id").collect()} == separate
    if name != "cooperative-sticky":  # which revokes b's doubly claimed t1-1 in round one
        assert len(separate) == sum(sum(c.values()) for _, c, _ in GROUPS.values()) - 1  # c's t1: no subscriber
