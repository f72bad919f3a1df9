"""groupcoord's assignors against Apache Kafka's own Java assignors (the bench harness, compiled against the fetched
Kafka jars, in a real JVM), on small groups.

Range and roundrobin must give exactly Java's rows, static members and heterogeneous subscriptions included. Sticky,
cooperative-sticky and uniform must be at least as balanced and at least as sticky as Java's on the same rebalance,
each side running rounds until every partition is assigned, and so must a consumer group's range (KIP-848) against
Kafka's server-side ``RangeAssignor``, whose fresh rows it gives exactly. Claims in different generations resolve as
Java's sticky assignors resolve them (``test_claims.py``): exactly Java's rows on a case the claims decide.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from bench.assign_java_cases import (
    Group,
    Member,
    case_text,
    explicit,
    moves,
    owned_table,
    read_assignment,
    read_case,
    rebalance,
    same_rows,
    spreads,
)
from bench.assign_java_peer import java_converged, ours_converged, run_java

pytestmark = [pytest.mark.spark, pytest.mark.slow]

# Two groups in one case: one batched groupcoord call, one JVM per assignor.
# "flat": 7 members on 3 topics of 10 partitions; m6 and m2 are static, so they come first, by instance id.
# "mixed": subscriptions differ, partition counts too; m10 sorts between m1 and m4 by member id.
EXACT_CASE: tuple[Group, ...] = (
    explicit("flat", {"a": 10, "b": 10, "c": 10},
             [(f"m{i}", {6: "static-a", 2: "static-b"}.get(i), ["a", "b", "c"]) for i in range(7)]),
    explicit("mixed", {"a": 10, "b": 7, "c": 3, "unwanted": 4}, [
        ("m3", "i-b", ["a", "b"]), ("m1", None, ["a", "b", "c"]), ("m10", None, ["c"]), ("m2", "i-a", ["b", "c"]),
        ("m0", None, ["a"]), ("m5", "i-c", ["a", "b", "c"]), ("m4", None, ["a", "c", "missing"]),
    ]),
)

# 12 members owned 60 partitions; every 4th left and 4 joined.
REBALANCE_CASE: tuple[Group, ...] = tuple(
    rebalance(group_id, members=12, partitions=60, topics=3, leaving_every=4, joining=4, heterogeneous=heterogeneous)
    for group_id, heterogeneous in (("homogeneous", False), ("heterogeneous", True)))

# Claims the generations decide (tests/assignors/test_claims.py): A, B and D are in generation 3, C one behind. t0p0
# (A 3, C 2) is A's; C keeps its uncontested t0p2 and t0p6; t0p3 (B and D, both 3) is nobody's, so D takes it with
# t0p7, except in cooperative-sticky's first round, which holds it back from both.
CLAIMS_CASE: tuple[Group, ...] = (Group("claims", {"t0": 8}, tuple(Member(m) for m in "ABCD"), owned=(
    ("A", "t0", 0, 3), ("A", "t0", 4, 3), ("B", "t0", 1, 3), ("B", "t0", 3, 3), ("B", "t0", 5, 3),
    ("C", "t0", 0, 2), ("C", "t0", 2, 2), ("C", "t0", 6, 2), ("D", "t0", 3, 3))),)


def test_case_text_round_trips() -> None:
    """The case file both sides read describes exactly the case that was written."""
    for case in (EXACT_CASE, REBALANCE_CASE, CLAIMS_CASE):
        assert read_case(case_text(case)) == case


@pytest.mark.parametrize("name", ["range", "roundrobin"])
def test_same_rows_as_java(spark: SparkSession, tmp_path: Path, name: str) -> None:
    """Exactly Kafka's assignment, every row."""
    case_file = tmp_path / "case.txt"
    case_file.write_text(case_text(EXACT_CASE), encoding="utf-8")
    output = tmp_path / "java.tsv"
    run_java(case_file, name, warmup=0, runs=0, output=output)
    java = read_assignment(output)
    ours, rounds = ours_converged(spark, EXACT_CASE, name, limit=1)
    assert rounds == 1
    assert java.num_rows == 50  # every partition of a subscribed topic ("unwanted" and "missing" aside)
    assert same_rows(ours, java), (sorted(ours.to_pylist(), key=str), sorted(java.to_pylist(), key=str))


@pytest.mark.parametrize(("name", "java_name"), [
    ("sticky", "sticky"), ("cooperative-sticky", "cooperative-sticky"), ("uniform", "uniform"),
    # A consumer group's range (KIP-848's server assignor) against Kafka's server-side RangeAssignor.
    ("range", "server-range"),
])
def test_as_balanced_and_as_sticky_as_java(spark: SparkSession, tmp_path: Path, name: str, java_name: str) -> None:
    """On each group of the same rebalance: spread (max - min per member) and moved owned partitions no larger."""
    theirs, _ = java_converged(REBALANCE_CASE, java_name, tmp_path)
    ours, _ = ours_converged(spark, REBALANCE_CASE, name)
    assert ours.num_rows == theirs.num_rows == 120
    previous = owned_table(REBALANCE_CASE)
    ours_spread, java_spread = spreads(REBALANCE_CASE, ours), spreads(REBALANCE_CASE, theirs)
    ours_moved, java_moved = moves(previous, ours), moves(previous, theirs)
    for group in ("homogeneous", "heterogeneous"):
        assert ours_spread[group] <= java_spread[group], (group, ours_spread, java_spread)
        assert ours_moved[group] <= java_moved[group], (group, ours_moved, java_moved)


@pytest.mark.parametrize("name", ["sticky", "cooperative-sticky"])
def test_claims_in_different_generations_resolve_as_in_java(spark: SparkSession, tmp_path: Path, name: str) -> None:
    """One round of CLAIMS_CASE: exactly Java's rows."""
    java, _ = java_converged(CLAIMS_CASE, name, tmp_path, limit=1)
    ours, _ = ours_converged(spark, CLAIMS_CASE, name, limit=1)
    rows = sorted((r["member_id"], r["partition"]) for r in ours.to_pylist())
    expected = [("A", 0), ("A", 4), ("B", 1), ("B", 5), ("C", 2), ("C", 6), *([("D", 3)] if name == "sticky" else []),
                ("D", 7)]
    assert rows == expected
    assert same_rows(ours, java), (sorted(java.to_pylist(), key=str))


def test_a_fresh_consumer_group_gets_kafkas_server_side_range_rows(spark: SparkSession, tmp_path: Path) -> None:
    """A consumer group's ``range`` (KIP-848's server assignor of that name) on a group that owns nothing: exactly the
    rows of Kafka's server-side ``RangeAssignor``."""
    case_file = tmp_path / "case.txt"
    case_file.write_text(case_text(EXACT_CASE), encoding="utf-8")
    output = tmp_path / "java.tsv"
    run_java(case_file, "server-range", warmup=0, runs=0, output=output)
    java = read_assignment(output)
    ours, _ = ours_converged(spark, EXACT_CASE, "range", limit=1)
    assert same_rows(ours, java), (sorted(ours.to_pylist(), key=str), sorted(java.to_pylist(), key=str))
