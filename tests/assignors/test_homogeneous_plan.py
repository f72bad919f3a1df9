"""The proven-homogeneous plan: when every group's members declare the same topics, the balanced assignors take a
group's topics from one member instead of a row per member and topic. It must give exactly the general plan's
answer, and only a proof (the ``auto`` check, or the coordinator's own comparison) may select it."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from groupcoord.assignors import get_assignor
from groupcoord.assignors.homogeneity import declared_heterogeneous
from groupcoord.assignors.prepare import Prepared
from groupcoord.assignors.range_plan import RangeAssignor
from groupcoord.assignors.roundrobin_plan import RoundRobinAssignor
from groupcoord.assignors.sticky_plan import GloballyBalancedAssignor
from groupcoord.assignors.weighted_plan import WeightedAssignor
from tests.assignors.builders import OWNED, as_dict, members_df, partitions_df
from tests.assignors.properties import check_valid

pytestmark = [pytest.mark.spark, pytest.mark.slow]

BALANCED = ["sticky", "uniform", "cooperative-sticky"]

# group -> (members' shared topics, member ids, partition counts, owned claims)
GROUPS: dict[str, tuple[list[str], list[str], dict[str, int], list[tuple[str, str, int, int]]]] = {
    # c1 over quota, c3 new; t9 is declared but does not exist
    "uneven": (["t1", "t2", "t9"], ["c1", "c2", "c3"], {"t1": 5, "t2": 4},
               [("c1", "t1", p, 3) for p in range(5)] + [("c2", "t2", 0, 3)]),
    # two members claim t1-0 in its top generation; a's older claim of t1-2 is uncontested; a departed member and a
    # partition that no longer exists are claimed too
    "conflicts": (["t1"], ["a", "b"], {"t1": 4},
                  [("a", "t1", 0, 2), ("b", "t1", 0, 2), ("b", "t1", 1, 2), ("a", "t1", 2, 1),
                   ("gone", "t1", 3, 2), ("a", "t1", 7, 2)]),
    # nothing declared exists: nothing to assign
    "missing": (["t8"], ["m1", "m2"], {"t1": 2}, []),
}


def _batch(spark: SparkSession) -> tuple[DataFrame, DataFrame, DataFrame]:
    members, partitions, owned = [], [], []
    for gid, (topics, ids, counts, claims) in GROUPS.items():
        members.append(members_df(spark, {m: topics for m in ids}).select(F.lit(gid).alias("group_id"), "*"))
        partitions.append(partitions_df(spark, counts).select(F.lit(gid).alias("group_id"), "*"))
        owned.append(spark.createDataFrame(claims, OWNED).select(F.lit(gid).alias("group_id"), "*"))

    def union(frames: list[DataFrame]) -> DataFrame:
        out = frames[0]
        for frame in frames[1:]:
            out = out.unionByName(frame)
        return out

    return union(members), union(partitions), union(owned)


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Range, roundrobin and weighted: the ``homogeneous`` flag of the prepared frames each plan was built on."""
    calls: list[bool] = []
    for cls in (RangeAssignor, RoundRobinAssignor, WeightedAssignor):
        monkeypatch.setattr(cls, "_plan", _spy(cls._plan, calls))
    return calls


def _spy(plan: Any, calls: list[bool]) -> Any:
    def spy(self: Any, prepared: Prepared) -> DataFrame:
        calls.append(prepared.homogeneous)
        return plan(self, prepared)  # type: ignore[no-any-return]

    return spy


@pytest.fixture
def planned_on(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """The balanced assignors: the ``homogeneous`` flag of the prepared frames each DataFrame plan was built on (a
    call whose members only a job can read is collected first, and its prepared frames are then marked proven)."""
    calls: list[bool] = []
    plan = GloballyBalancedAssignor._plan

    def spy(self: GloballyBalancedAssignor, prepared: Prepared) -> DataFrame:
        calls.append(prepared.homogeneous)
        return plan(self, prepared)

    monkeypatch.setattr(GloballyBalancedAssignor, "_plan", spy)
    return calls


@pytest.mark.parametrize("name", BALANCED)
def test_proven_plan_equals_the_general_plan(spark: SparkSession, name: str, planned_on: list[bool]) -> None:
    members, partitions, owned = _batch(spark)
    proven = {tuple(r) for r in get_assignor(name).assign(members, partitions, owned).collect()}
    # A bare "homogeneous" is not a proof: the general plan, with its per-topic scope detection, runs.
    general = {tuple(r) for r in get_assignor(name, subscriptions="homogeneous").assign(
        members, partitions, owned).collect()}
    assert planned_on == [True, False]
    assert proven == general
    assert {g for g, *_ in proven} == {"uneven", "conflicts"}
    if name == "cooperative-sticky":  # round one holds back what changes owner: checked by its own tests
        return
    by_group: dict[object, dict[str, list[tuple[str, int]]]] = {}
    for gid, member, topic, partition in proven:
        by_group.setdefault(gid, {}).setdefault(member, []).append((topic, partition))
    for gid in ("uneven", "conflicts"):
        topics, ids, counts, _ = GROUPS[gid]
        check_valid(by_group[gid], {m: topics for m in ids}, counts)
    assert {m: len(p) for m, p in by_group["uneven"].items()} == {"c1": 3, "c2": 3, "c3": 3}


def test_a_null_topic_list_makes_the_group_heterogeneous(spark: SparkSession) -> None:
    members = spark.createDataFrame([("a", None, None, None), ("b", None, ["t1"], None)],
                                    "member_id string, group_instance_id string, topics array<string>, rack string")
    assert declared_heterogeneous(members)
    out = as_dict(get_assignor("sticky").assign(members, partitions_df(spark, {"t1": 3})))[None]
    assert out == {"b": [("t1", 0), ("t1", 1), ("t1", 2)]}


@pytest.mark.parametrize("name", ["range", "roundrobin", "weighted"])
def test_range_roundrobin_and_weighted_proven_plans_equal_their_general_plans(
        spark: SparkSession, name: str, seen: list[bool]) -> None:
    members, partitions, owned = _batch(spark)
    # uneven members per topic count: 5 partitions over 3 members (range's runs of 2, 2, 1), 4 over 3, and a
    # group with more members than partitions
    extra = members_df(spark, {f"x{i}": ["t1"] for i in range(5)}).select(F.lit("wide").alias("group_id"), "*")
    members = members.unionByName(extra)
    partitions = partitions.unionByName(partitions_df(spark, {"t1": 3}).select(F.lit("wide").alias("group_id"), "*"))
    assignor = get_assignor(name)
    proven = {tuple(r) for r in assignor.assign(members, partitions, owned).collect()}
    general = {tuple(r) for r in assignor.assign_as("plan", members, partitions, owned).collect()}
    assert seen == [True, False]
    assert proven == general
    assert len(proven) == 9 + 4 + 3  # uneven, conflicts (t1 has 4), wide; "missing" declares no existing topic


def test_range_and_roundrobin_homogeneous_deals(spark: SparkSession) -> None:
    """Kafka's expectations for three members on two topics of 5 and 4 partitions (Java's RangeAssignor and
    RoundRobinAssignor by hand), through the homogeneous plan."""
    members = members_df(spark, {m: ["t1", "t2"] for m in ("c0", "c1", "c2")})
    partitions = partitions_df(spark, {"t1": 5, "t2": 4})
    ranged = as_dict(get_assignor("range").assign(members, partitions))[None]
    assert ranged == {"c0": [("t1", 0), ("t1", 1), ("t2", 0), ("t2", 1)],
                      "c1": [("t1", 2), ("t1", 3), ("t2", 2)],
                      "c2": [("t1", 4), ("t2", 3)]}
    dealt = as_dict(get_assignor("roundrobin").assign(members, partitions))[None]
    assert dealt == {"c0": [("t1", 0), ("t1", 3), ("t2", 1)],
                     "c1": [("t1", 1), ("t1", 4), ("t2", 2)],
                     "c2": [("t1", 2), ("t2", 0), ("t2", 3)]}
