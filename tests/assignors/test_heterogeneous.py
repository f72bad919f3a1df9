"""Global balance for heterogeneous subscriptions (sticky, cooperative-sticky, uniform): named cases."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from groupcoord.assignors import AssignorInputError, get_assignor
from groupcoord.assignors.collect import to_arrow
from groupcoord.assignors.frames import MEMBER_SCHEMA, OWNED_SCHEMA, PARTITION_SCHEMA, local_frame
from groupcoord.assignors.homogeneity import declared_heterogeneous
from tests.assignors.builders import (
    OWNED,
    PARTITIONS,
    as_dict,
    expected_df,
    members_df,
    partitions_df,
    sorted_output,
)
from tests.assignors.properties import check_balanced, check_keeps_all, check_valid

pytestmark = [pytest.mark.spark, pytest.mark.slow]

BALANCED = ["sticky", "uniform", "cooperative-sticky"]
A_B = {"A": ["t1", "t2"], "B": ["t1"]}


def _assert_output(actual: DataFrame, expected: DataFrame) -> None:
    assert_df_equality(sorted_output(actual), expected, ignore_nullable=True)


@pytest.mark.parametrize("name", BALANCED)
def test_a_member_on_fewer_topics_takes_what_it_can(spark: SparkSession, name: str) -> None:
    out = get_assignor(name).assign(members_df(spark, A_B), partitions_df(spark, {"t1": 2, "t2": 2}))
    _assert_output(out, expected_df(spark, {"A": [("t2", 0), ("t2", 1)], "B": [("t1", 0), ("t1", 1)]}))


def test_topic_by_topic_balance_fails_the_global_property(spark: SparkSession) -> None:
    """The property check catches the per-topic result (what ``subscriptions="homogeneous"`` forces)."""
    out = get_assignor("sticky", subscriptions="homogeneous").assign(
        members_df(spark, A_B), partitions_df(spark, {"t1": 2, "t2": 2})
    )
    assignment = as_dict(out)[None]
    check_valid(assignment, A_B, {"t1": 2, "t2": 2})
    assert {m: len(p) for m, p in assignment.items()} == {"A": 3, "B": 1}
    with pytest.raises(AssertionError, match="could move from A"):
        check_balanced(assignment, A_B)


@pytest.mark.parametrize("name", ["sticky", "uniform"])
def test_a_chain_of_overlapping_subscriptions_evens_out(spark: SparkSession, name: str) -> None:
    subs = {"A": ["t1"], "B": ["t1", "t2"], "C": ["t2", "t3"], "D": ["t3"]}
    counts = {"t1": 4, "t2": 4, "t3": 4}
    assignment = as_dict(get_assignor(name).assign(members_df(spark, subs), partitions_df(spark, counts)))[None]
    check_valid(assignment, subs, counts)
    check_balanced(assignment, subs)
    assert {m: len(p) for m, p in assignment.items()} == {"A": 3, "B": 3, "C": 3, "D": 3}


@pytest.mark.parametrize("name", BALANCED)
def test_a_member_subscribed_to_nothing_that_exists_gets_nothing(spark: SparkSession, name: str) -> None:
    subs = {"A": ["t1", "t2"], "B": ["t1"], "C": ["missing"]}
    out = get_assignor(name).assign(members_df(spark, subs), partitions_df(spark, {"t1": 2, "t2": 2}))
    _assert_output(out, expected_df(spark, {"A": [("t2", 0), ("t2", 1)], "B": [("t1", 0), ("t1", 1)]}))


@pytest.mark.parametrize("name", ["sticky", "uniform"])
def test_the_partition_that_moves_is_one_in_the_receivers_rack(spark: SparkSession, name: str) -> None:
    racks = {0: ["b"], 1: ["b"], 2: ["a"], 3: ["b"]}
    partitions = spark.createDataFrame(
        [("t1", p, r, None) for p, r in racks.items()] + [("t2", p, None, None) for p in range(2)], PARTITIONS
    )
    out = get_assignor(name).assign(members_df(spark, A_B, racks={"A": "a", "B": "b"}), partitions)
    expected = {"A": [("t1", 2), ("t2", 0), ("t2", 1)], "B": [("t1", 0), ("t1", 1), ("t1", 3)]}
    _assert_output(out, expected_df(spark, expected))


def test_owned_partitions_stay_when_balance_allows(spark: SparkSession) -> None:
    """B owned t1p1 and keeps it; the one t1 partition A gives up besides is the other."""
    owned = spark.createDataFrame([("A", "t1", 0, 1), ("A", "t2", 0, 1), ("B", "t1", 1, 1)], OWNED)
    subs = {"A": ["t1", "t2"], "B": ["t1"]}
    out = get_assignor("sticky").assign(members_df(spark, subs), partitions_df(spark, {"t1": 3, "t2": 1}), owned)
    _assert_output(out, expected_df(spark, {"A": [("t1", 0), ("t2", 0)], "B": [("t1", 1), ("t1", 2)]}))


def test_cooperative_rounds_revoke_then_converge(spark: SparkSession) -> None:
    members, partitions = members_df(spark, A_B), partitions_df(spark, {"t1": 2, "t2": 2})
    owned = spark.createDataFrame([("A", "t1", 0, 1), ("A", "t1", 1, 1), ("A", "t2", 0, 1)], OWNED)
    assignor = get_assignor("cooperative-sticky")
    round1 = assignor.assign(members, partitions, owned)
    _assert_output(round1, expected_df(spark, {"A": [("t2", 0), ("t2", 1)]}))
    round2 = assignor.assign(members, partitions, round1.withColumn("generation", F.lit(2)))
    _assert_output(round2, expected_df(spark, {"A": [("t2", 0), ("t2", 1)], "B": [("t1", 0), ("t1", 1)]}))


def _jobs_of(spark: SparkSession, tag: str, frame: DataFrame) -> tuple[bool, int]:
    context = spark.sparkContext
    context.setJobGroup(tag, tag)
    try:
        answer = declared_heterogeneous(frame)
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    return answer, len(context.statusTracker().getJobIdsForGroup(tag))


def test_subscriptions_check_runs_no_job_for_a_constant_topics_column(spark: SparkSession) -> None:
    topics = F.array(F.lit("t0"), F.lit("t1")).alias("topics")
    generated = spark.range(4).select(F.concat(F.lit("m"), F.col("id").cast("string")).alias("member_id"), topics)
    assert _jobs_of(spark, "probe-constant", generated) == (False, 0)
    same_sets = members_df(spark, {"A": ["t1", "t2"], "B": ["t2", "t1", "t1"]})
    assert _jobs_of(spark, "probe-same", same_sets)[0] is False
    assert _jobs_of(spark, "probe-different", members_df(spark, A_B))[0] is True


def test_cooperative_round_two_keeps_every_round_one_partition(spark: SparkSession) -> None:
    """Found by the property test: starting round 2 from per-topic quotas gave m0 (on t0 only) two t0 partitions
    back, and the rounds then took an owned t2 partition away from m3 to even out m1."""
    subs = {"m0": ["absent", "t0"], "m1": ["t2", "absent"], "m2": ["t0", "t1", "t2"], "m3": ["t0", "t1", "t2"]}
    counts = {"t0": 5, "t1": 5, "t2": 6}
    members, partitions = members_df(spark, subs), partitions_df(spark, counts)
    owned = spark.createDataFrame([("m3", "t0", p, 1) for p in (1, 2, 4)] + [("m3", "t1", 0, 1)], OWNED)
    assignor = get_assignor("cooperative-sticky")
    round1 = as_dict(assignor.assign(members, partitions, owned))[None]
    claims = spark.createDataFrame([(m, t, p, 2) for m, tps in round1.items() for t, p in tps], OWNED)
    round2 = as_dict(assignor.assign(members, partitions, claims))[None]
    check_valid(round2, subs, counts)
    check_balanced(round2, subs)
    check_keeps_all(round2, round1)


@pytest.mark.parametrize("name", ["sticky", "uniform"])
def test_a_subset_needing_a_chain_of_moves_is_still_kept_whole(spark: SparkSession, name: str) -> None:
    """Found by the property test (explore profile): every owned partition can stay (m0 5, m2 5, m1 4, m3 3 is
    globally balanced); the former rounds of pairwise moves evened the loads to 5, 4, 4, 4 by taking m2's owned t2p0
    to m1."""
    subs = {"m0": ["t0"], "m1": ["t1", "t2"], "m2": ["t0", "absent", "t1", "t2"], "m3": ["absent", "t1"]}
    counts = {"t0": 7, "t1": 6, "t2": 4}
    owned = {"m0": [("t0", 0), ("t0", 4), ("t0", 5), ("t0", 6)], "m1": [("t1", 1), ("t1", 2)],
             "m2": [("t0", 2), ("t2", 0), ("t2", 2), ("t2", 3)], "m3": [("t1", 4), ("t1", 5)]}
    claims = spark.createDataFrame([(m, t, p, 1) for m, tps in owned.items() for t, p in tps], OWNED)
    result = as_dict(get_assignor(name).assign(members_df(spark, subs), partitions_df(spark, counts), claims))[None]
    check_valid(result, subs, counts)
    check_balanced(result, subs)
    check_keeps_all(result, owned)


@pytest.mark.parametrize(("driver_local", "driver_partitions", "jobs"),
                         [(True, None, 1), (False, None, 1), (True, 0, 1), (False, 0, 2)])
def test_a_heterogeneous_batch_is_at_most_two_jobs_whatever_its_subscriptions(
        spark: SparkSession, driver_local: bool, driver_partitions: int | None, jobs: int) -> None:
    """Eight groups, every member on a different set of topics, and owned partitions (issue 20: at most 3 jobs per
    call). A call this small runs on the driver: one job collects it (for members Spark must compute, a
    repartitioned frame, that job also answers the subscriptions check) and the result is driver-local. In Python
    tasks (``driver_partitions=0``), driver-local members need no job for the check, so the call is the one job that
    collects the result; members Spark must compute cost the check's one small job more."""
    topics = [f"t{i}" for i in range(4)]
    members = [(f"g{g}", f"m{m}", None, [t for i, t in enumerate(topics) if (m + g) >> i & 1] or ["t0"], None)
               for g in range(8) for m in range(6)]
    partitions = [(f"g{g}", t, p, None, None) for g in range(8) for t in topics for p in range(5)]
    owned = [(f"g{g}", "m1", "t0", p, 1) for g in range(8) for p in range(5)]
    member_frame = local_frame(spark, members, MEMBER_SCHEMA)
    if not driver_local:
        member_frame = member_frame.repartition(2)
        assert not member_frame.isLocal()
    frames = (member_frame, local_frame(spark, partitions, PARTITION_SCHEMA), local_frame(spark, owned, OWNED_SCHEMA))
    assignor = get_assignor("cooperative-sticky") if driver_partitions is None else get_assignor(
        "cooperative-sticky", driver_partitions=driver_partitions)
    context = spark.sparkContext
    tag = f"heterogeneous-jobs-{driver_local}-{driver_partitions}"
    context.setJobGroup(tag, tag)
    try:
        rows = assignor.assign(*frames).collect()
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    assert len(context.statusTracker().getJobIdsForGroup(tag)) == jobs
    assert {row["group_id"] for row in rows} == {f"g{g}" for g in range(8)}


@pytest.mark.parametrize("name", BALANCED)
def test_the_driver_and_the_python_tasks_give_the_same_rows(spark: SparkSession, name: str) -> None:
    """A heterogeneous batch of 12 groups (with claims, racks and a static member) on the driver, in Python tasks
    (``driver_partitions=0``), and past the driver's bound (``driver_partitions=10``: collected, found too large,
    then tasks)."""
    topics = [f"t{i}" for i in range(4)]
    members = [(f"g{g}", f"m{m}", "static" if m == 2 else None,
                [t for i, t in enumerate(topics) if (m * 3 + g) >> i & 1] or ["t1"], "ab"[m % 2])
               for g in range(12) for m in range(5)]
    partitions = [(f"g{g}", t, p, ["a"] if p % 3 else ["b"], None) for g in range(12) for t in topics for p in range(4)]
    owned = [(f"g{g}", f"m{(p + g) % 5}", t, p, 1) for g in range(12) for t in topics[:2] for p in range(4)]
    frames = (local_frame(spark, members, MEMBER_SCHEMA).repartition(3),
              local_frame(spark, partitions, PARTITION_SCHEMA), local_frame(spark, owned, OWNED_SCHEMA))

    def rows(**options: int) -> list[tuple[str, str, str, int]]:
        table = get_assignor(name, **options).assign(*frames).toArrow()  # type: ignore[arg-type]
        return sorted(zip(*(table[c].to_pylist() for c in ("group_id", "member_id", "topic", "partition")),
                          strict=True))

    on_driver = rows()
    # cooperative-sticky's round one holds back the partitions that change owner
    assert len(on_driver) == 12 * 4 * 4 or (name == "cooperative-sticky" and 0 < len(on_driver) < 12 * 4 * 4)
    assert rows(driver_partitions=0) == on_driver
    assert rows(driver_partitions=10) == on_driver


def test_bad_values_on_the_driver_get_the_plans_messages(spark: SparkSession) -> None:
    """The driver checks the values of a call it assigns (Group's check), with the plans' one-line messages."""
    members = members_df(spark, A_B)
    duplicate = spark.createDataFrame([("t1", 0, None, None), ("t1", 0, None, None), ("t2", 0, None, None)],
                                      PARTITIONS)
    with pytest.raises(AssignorInputError, match=r"^duplicate partition t1-0$"):
        to_arrow(get_assignor("sticky").assign(members, duplicate))
    null_partition = spark.createDataFrame([("t1", None, None, None), ("t2", 0, None, None)], PARTITIONS)
    with pytest.raises(AssignorInputError, match=r"^negative or null partition t1-null$"):
        to_arrow(get_assignor("sticky").assign(members, null_partition))
    twice = spark.createDataFrame([("A", ["t1", "t2"]), ("A", ["t1"])], "member_id string, topics array<string>")
    with pytest.raises(AssignorInputError, match=r"^duplicate or null member_id A in group ''$"):
        to_arrow(get_assignor("uniform").assign(twice, partitions_df(spark, {"t1": 1, "t2": 1})))
