"""Exact-output tests for ``range`` and ``roundrobin``: the cases of Kafka's RangeAssignorTest and
RoundRobinAssignorTest, rewritten for DataFrames.

Every case is its own group (``group_id`` = the case name) and all cases of an assignor are assigned in ONE batched
call, compared exactly with chispa: one Spark job per assignor instead of one per case.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from chispa import assert_df_equality
from pyspark.sql import SparkSession

from groupcoord.assignors import get_assignor
from tests.assignors.builders import MEMBERS, OUTPUT, PARTITIONS, sorted_output

pytestmark = pytest.mark.spark

BOTH = ("range", "roundrobin")


@dataclass(frozen=True)
class Case:
    """One Kafka test case: subscriptions, partition counts, the expected assignment per assignor."""

    name: str
    subs: dict[str, list[str]]
    counts: dict[str, int]
    expected: dict[str, dict[str, list[tuple[str, int]]]]  # assignor -> member -> partitions
    instance_ids: dict[str, str] = field(default_factory=dict)


def _same(name: str, subs: dict[str, list[str]], counts: dict[str, int],
          expected: dict[str, list[tuple[str, int]]]) -> Case:
    return Case(name, subs, counts, {a: expected for a in BOTH})


CASES = (
    _same("one_consumer_no_topic", {"c": []}, {"t": 3}, {}),
    _same("one_consumer_nonexistent_topic", {"c": ["missing"]}, {"t": 3}, {}),
    _same("one_consumer_one_topic", {"c": ["t"]}, {"t": 3}, {"c": [("t", 0), ("t", 1), ("t", 2)]}),
    _same("only_subscribed_topics", {"c": ["t"]}, {"t": 3, "other": 3}, {"c": [("t", 0), ("t", 1), ("t", 2)]}),
    _same("one_consumer_multiple_topics", {"c": ["t1", "t2"]}, {"t1": 1, "t2": 2},
          {"c": [("t1", 0), ("t2", 0), ("t2", 1)]}),
    _same("two_consumers_one_partition", {"c1": ["t"], "c2": ["t"]}, {"t": 1}, {"c1": [("t", 0)]}),
    _same("two_consumers_two_partitions", {"c1": ["t"], "c2": ["t"]}, {"t": 2}, {"c1": [("t", 0)], "c2": [("t", 1)]}),
    _same("multiple_consumers_mixed_topics", {"c1": ["t1"], "c2": ["t1", "t2"], "c3": ["t1"]}, {"t1": 3, "t2": 2},
          {"c1": [("t1", 0)], "c2": [("t1", 1), ("t2", 0), ("t2", 1)], "c3": [("t1", 2)]}),
    Case("two_consumers_two_topics_six_partitions", {"c1": ["t1", "t2"], "c2": ["t1", "t2"]}, {"t1": 3, "t2": 3}, {
        "range": {"c1": [("t1", 0), ("t1", 1), ("t2", 0), ("t2", 1)], "c2": [("t1", 2), ("t2", 2)]},
        "roundrobin": {"c1": [("t1", 0), ("t1", 2), ("t2", 1)], "c2": [("t1", 1), ("t2", 0), ("t2", 2)]},
    }),
    # "z" is static (instance "i0") so it sorts before the dynamic "a": it takes the first range (and turn).
    Case("static_members_first_by_instance_id", {"a": ["t"], "z": ["t"]}, {"t": 3}, {
        "range": {"z": [("t", 0), ("t", 1)], "a": [("t", 2)]},
        "roundrobin": {"z": [("t", 0), ("t", 2)], "a": [("t", 1)]},
    }, instance_ids={"z": "i0"}),
    # As in Kafka's static-member round-robin test: a rejoin with a new member id keeps the instance's place.
    Case("static_members_keep_their_turn", {"m-9": ["t"], "m-1": ["t"], "m-5": ["t"]}, {"t": 4}, {
        "range": {"m-9": [("t", 0), ("t", 1)], "m-1": [("t", 2)], "m-5": [("t", 3)]},
        "roundrobin": {"m-9": [("t", 0), ("t", 3)], "m-1": [("t", 1)], "m-5": [("t", 2)]},
    }, instance_ids={"m-9": "i0", "m-1": "i1", "m-5": "i2"}),
)


@pytest.mark.parametrize("name", BOTH)
def test_kafka_cases_exact_output_in_one_batched_call(spark: SparkSession, name: str) -> None:
    members = [(c.name, m, c.instance_ids.get(m), topics, None) for c in CASES for m, topics in c.subs.items()]
    partitions = [(c.name, t, p, None, None) for c in CASES for t, n in c.counts.items() for p in range(n)]
    expected = sorted((c.name, m, t, p) for c in CASES for m, tps in c.expected[name].items() for t, p in tps)
    out = get_assignor(name).assign(
        spark.createDataFrame(members, f"group_id string, {MEMBERS}"),
        spark.createDataFrame(partitions, f"group_id string, {PARTITIONS}"),
    )
    assert_df_equality(sorted_output(out), spark.createDataFrame(expected, f"group_id string not null, {OUTPUT}"))
