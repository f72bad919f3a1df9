"""Hypothesis property tests: each test draws one batch of K random groups and assigns it in ONE batched call.

A Spark call costs seconds whatever its size, so each test runs one example of many groups rather than several
examples of a few: Hypothesis's first example is its simplest (K copies of a one-member group), which
:func:`batch` rejects before any Spark work, so the one example that runs is a random batch."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import DataFrame, SparkSession

from groupcoord.assignors import get_assignor
from tests.assignors.builders import MEMBERS, OWNED, PARTITIONS, Assignment, as_dict
from tests.assignors.properties import check_balanced, check_keeps_all, check_sticky, check_valid
from tests.assignors.strategies import Case, cases, owning_balanced

pytestmark = [pytest.mark.spark, pytest.mark.slow]

K = 16
SETTINGS = settings(max_examples=1, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def batch(group: st.SearchStrategy[Case]) -> st.SearchStrategy[list[Case]]:
    """K groups of ``group``, at least one of them with members that compete (more than one member)."""
    return st.lists(group, min_size=K, max_size=K).filter(lambda groups: any(len(c.subs) > 1 for c in groups))


def _frames(spark: SparkSession, groups: Sequence[Case],
            owned_override: dict[str, Assignment] | None = None) -> tuple[DataFrame, DataFrame, DataFrame]:
    members, partitions, owned = [], [], []
    for g, case in enumerate(groups):
        gid = f"g{g}"
        members += [(gid, m, None, topics, None) for m, topics in case.subs.items()]
        partitions += [(gid, t, p, None, None) for t, n in case.counts.items() for p in range(n)]
        claims = (owned_override or {}).get(gid, case.owned)
        owned += [(gid, m, t, p, 1) for m, tps in claims.items() for t, p in tps]
    return (
        spark.createDataFrame(members, f"group_id string, {MEMBERS}"),
        spark.createDataFrame(partitions, f"group_id string, {PARTITIONS}"),
        spark.createDataFrame(owned, f"group_id string, {OWNED}"),
    )


def _assign(spark: SparkSession, name: str, groups: Sequence[Case],
            owned_override: dict[str, Assignment] | None = None) -> dict[str, Assignment]:
    result = as_dict(get_assignor(name).assign(*_frames(spark, groups, owned_override)), group=True)
    return {f"g{g}": result.get(f"g{g}", {}) for g in range(len(groups))}


@SETTINGS
@given(groups=batch(cases(homogeneous=True)))
@pytest.mark.parametrize("name", ["sticky", "uniform"])
def test_balanced_assignors_are_valid_balanced_and_sticky(spark: SparkSession, name: str, groups: list[Case]) -> None:
    for gid, assignment in _assign(spark, name, groups).items():
        case = groups[int(gid[1:])]
        check_valid(assignment, case.subs, case.counts)
        check_balanced(assignment, case.subs)
        check_sticky(assignment, case.owned, case.subs, case.counts)


@SETTINGS
@given(groups=batch(cases(homogeneous=False)))
@pytest.mark.parametrize("name", ["range", "roundrobin", "weighted"])
def test_heterogeneous_subscriptions_stay_valid(spark: SparkSession, name: str, groups: list[Case]) -> None:
    for gid, assignment in _assign(spark, name, groups).items():
        case = groups[int(gid[1:])]
        check_valid(assignment, case.subs, case.counts)


@SETTINGS
@given(groups=batch(cases(homogeneous=False)))
@pytest.mark.parametrize("name", ["sticky", "uniform"])
def test_heterogeneous_subscriptions_are_balanced_globally(spark: SparkSession, name: str, groups: list[Case]) -> None:
    for gid, assignment in _assign(spark, name, groups).items():
        case = groups[int(gid[1:])]
        check_valid(assignment, case.subs, case.counts)
        check_balanced(assignment, case.subs)


@SETTINGS
@given(groups=batch(owning_balanced(subset=False)))
@pytest.mark.parametrize("name", ["sticky", "uniform", "cooperative-sticky"])
def test_a_globally_balanced_owned_assignment_is_kept_unchanged(
    spark: SparkSession, name: str, groups: list[Case]
) -> None:
    for gid, assignment in _assign(spark, name, groups).items():
        case = groups[int(gid[1:])]
        check_balanced(case.owned, case.subs)
        assert assignment == case.owned


@SETTINGS
@given(groups=batch(owning_balanced(subset=True)))
@pytest.mark.parametrize("name", ["sticky", "uniform"])
def test_a_subset_of_a_balanced_assignment_is_kept_whole(spark: SparkSession, name: str, groups: list[Case]) -> None:
    for gid, assignment in _assign(spark, name, groups).items():
        case = groups[int(gid[1:])]
        check_valid(assignment, case.subs, case.counts)
        check_balanced(assignment, case.subs)
        check_keeps_all(assignment, case.owned)


@SETTINGS
@given(data=st.data())
@pytest.mark.parametrize("homogeneous", [True, False], ids=["homogeneous", "heterogeneous"])
def test_cooperative_sticky_revokes_before_reassigning_and_converges_in_two_rounds(
    spark: SparkSession, homogeneous: bool, data: st.DataObject
) -> None:
    """Round 1 is the sticky target minus every partition changing owner; round 2 (owned = round 1) keeps all of
    round 1 (a subset of a balanced assignment), is valid and globally balanced."""
    groups = data.draw(batch(cases(homogeneous=homogeneous)))
    round1 = _assign(spark, "cooperative-sticky", groups)
    target = _assign(spark, "sticky", groups)
    for gid, assignment in round1.items():
        case = groups[int(gid[1:])]
        previous = {tp: m for m, tps in case.owned.items() for tp in tps}
        moved = {tp for m, tps in target[gid].items() for tp in tps if previous.get(tp, m) != m}
        expected = {m: sorted(set(tps) - moved) for m, tps in target[gid].items()}
        assert {m: tps for m, tps in assignment.items()} == {m: tps for m, tps in expected.items() if tps}
    round2 = _assign(spark, "cooperative-sticky", groups, owned_override=round1)
    for gid, assignment in round2.items():
        case = groups[int(gid[1:])]
        check_valid(assignment, case.subs, case.counts)
        check_balanced(assignment, case.subs)
        check_keeps_all(assignment, round1[gid])
        if homogeneous:
            check_sticky(assignment, round1[gid], case.subs, case.counts)


@SETTINGS
@given(groups=batch(cases(homogeneous=True)))
def test_weighted_loads_stay_within_mean_plus_max_weight(spark: SparkSession, groups: list[Case]) -> None:
    members, partitions, owned = _frames(spark, groups)
    weighted = partitions.selectExpr(
        "group_id", "topic", "partition", "racks", "CAST((partition * 7 + length(topic)) % 5 + 1 AS DOUBLE) AS weight"
    )
    weights = {(r.group_id, r.topic, r.partition): r.weight for r in weighted.collect()}
    result = as_dict(get_assignor("weighted", tolerance=0.1).assign(members, weighted, owned), group=True)
    for g, case in enumerate(groups):
        gid = f"g{g}"
        assignment = result.get(gid, {})
        check_valid(assignment, case.subs, case.counts)
        group_weights = [w for (gg, _, _), w in weights.items() if gg == gid]
        bound = sum(group_weights) / len(case.subs) + max(group_weights) + 1e-9
        for member, parts in assignment.items():
            load = sum(weights[(gid, t, p)] for t, p in parts)
            assert load <= bound, f"{gid}/{member} load {load} > mean + max weight {bound}"
