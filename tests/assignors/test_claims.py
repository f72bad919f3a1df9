"""Claim resolution as Kafka's ``AbstractStickyAssignor`` does it: per partition, the claim of the highest generation
among its claimants wins; a tie in that generation leaves the partition unowned (and cooperative-sticky holds it
back from every claimant for a round); a claim by someone who is not a member is no claim. Named cases, each on the
Python algorithm and on the Spark paths (the proven-homogeneous plan, the general plan, the Python algorithm on the
driver), which must agree. ``test_java_parity.py`` holds a case of them against Kafka's own assignors."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from pyspark.sql import SparkSession

from groupcoord.assignors import get_assignor
from groupcoord.assignors.algorithms import Claim, Group, Member, Partition, assign
from groupcoord.assignors.collect import to_arrow
from groupcoord.assignors.frames import MEMBER_SCHEMA, OWNED_SCHEMA, PARTITION_SCHEMA, local_frame

BALANCED = ("sticky", "cooperative-sticky", "uniform")

Placed = dict[str, list[int]]
"""Member -> its partitions of topic ``t0``."""


@dataclass(frozen=True)
class Case:
    """One group on topic ``t0`` (every member subscribes to it) and what the rule makes of its claims."""

    members: tuple[str, ...]
    partitions: int
    claims: tuple[tuple[str, int, int], ...]
    """``(member_id, partition, generation)``."""
    owned: dict[int, str]
    """The partitions the rule gives an owner."""
    sticky: Placed
    """sticky's and uniform's assignment."""
    cooperative: Placed
    """cooperative-sticky's first round."""

    def group(self, group_id: str = "") -> Group:
        return Group(tuple(Member(m, ("t0",)) for m in self.members),
                     tuple(Partition("t0", p) for p in range(self.partitions)),
                     tuple(Claim(m, "t0", p, generation) for m, p, generation in self.claims), group_id)

    def expected(self, name: str) -> Placed:
        return self.cooperative if name == "cooperative-sticky" else self.sticky


CASES: dict[str, Case] = {
    # A claims t0p0 in generation 3, B in generation 2 (B missed a rebalance): A's. B's t0p1 is uncontested: B's.
    # (The group's highest generation alone made A own t0p0 and nobody t0p1: A [0, 1], B [2, 3].)
    "newest": Case(("A", "B"), 4, (("A", 0, 3), ("B", 0, 2), ("B", 1, 2)), {0: "A", 1: "B"},
                   {"A": [0, 2], "B": [1, 3]}, {"A": [0, 2], "B": [1, 3]}),
    # C is a generation behind and nobody contests its claims: it keeps them, and D, who joined, takes the rest.
    "older": Case(("A", "B", "C", "D"), 8, (("A", 0, 3), ("A", 4, 3), ("B", 1, 3), ("B", 5, 3), ("C", 2, 2),
                                            ("C", 6, 2)),
                  {0: "A", 4: "A", 1: "B", 5: "B", 2: "C", 6: "C"},
                  {"A": [0, 4], "B": [1, 5], "C": [2, 6], "D": [3, 7]},
                  {"A": [0, 4], "B": [1, 5], "C": [2, 6], "D": [3, 7]}),
    # A and B both claim t0p1 in generation 3: nobody owns it; cooperative-sticky gives it to nobody this round,
    # not even to A, whose target it is (B may still hold it).
    "tie": Case(("A", "B"), 4, (("A", 0, 3), ("A", 1, 3), ("B", 1, 3), ("B", 2, 3)), {0: "A", 2: "B"},
                {"A": [0, 1], "B": [2, 3]}, {"A": [0], "B": [2, 3]}),
    # A and B tie on t0p0 in generation 2, but C claims it in generation 3: C's.
    "tie-below": Case(("A", "B", "C"), 3, (("A", 0, 2), ("B", 0, 2), ("C", 0, 3)), {0: "C"},
                      {"A": [1], "B": [2], "C": [0]}, {"A": [1], "B": [2], "C": [0]}),
    # "gone" is no member: its claims count for nothing, not its generation 7 on t0p0 against A's 3, and not its
    # t0p1, which B takes at once, cooperative or not.
    "outside": Case(("A", "B"), 2, (("A", 0, 3), ("gone", 0, 7), ("gone", 1, 3)), {0: "A"},
                    {"A": [0], "B": [1]}, {"A": [0], "B": [1]}),
}


def _placed(rows: list[tuple[str, str, int]]) -> Placed:
    placed: Placed = {}
    for member, topic, partition in sorted(rows):
        assert topic == "t0"
        placed.setdefault(member, []).append(partition)
    return placed


@pytest.mark.parametrize("case", CASES)
def test_each_partition_goes_to_its_newest_claim_unless_tied(case: str) -> None:
    group = CASES[case].group()
    assert {p: owner for (_, p), owner in group.owned.items()} == CASES[case].owned


@pytest.mark.parametrize("name", BALANCED)
@pytest.mark.parametrize("case", CASES)
def test_the_python_algorithm_follows_the_rule(case: str, name: str) -> None:
    placed = assign(CASES[case].group(), name)
    assert _placed([(member, topic, p) for (topic, p), member in placed.items()]) == CASES[case].expected(name)


def test_a_tie_is_listed_with_both_claimants_and_an_older_claim_with_none() -> None:
    group = CASES["tie"].group()
    assert group.claimants[("t0", 1)] == ("A", "B")
    assert CASES["newest"].group().claimants[("t0", 0)] == ("A",)
    assert ("t0", 1) not in CASES["outside"].group().claimants


MODES: dict[str, dict[str, object]] = {
    "proven homogeneous plan": {},
    "general plan": {"subscriptions": "homogeneous"},
    "python on the driver": {"subscriptions": "heterogeneous"},
}
"""The plans resolve claims in SQL; the driver reads the claims as given and resolves them in Python (Python tasks
read the same rows: ``test_heterogeneous.py``)."""


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", BALANCED)
def test_every_spark_path_follows_the_rule(spark: SparkSession, name: str, mode: str) -> None:
    """Every case as a group of one batched call."""
    members = [(case, m, None, ["t0"], None) for case, c in CASES.items() for m in c.members]
    partitions = [(case, "t0", p, None, None) for case, c in CASES.items() for p in range(c.partitions)]
    owned = [(case, m, "t0", p, generation) for case, c in CASES.items() for m, p, generation in c.claims]
    frames = (local_frame(spark, members, MEMBER_SCHEMA), local_frame(spark, partitions, PARTITION_SCHEMA),
              local_frame(spark, owned, OWNED_SCHEMA))
    rows = to_arrow(get_assignor(name, **MODES[mode]).assign(*frames)).to_pylist()  # type: ignore[arg-type]
    for case in CASES:
        found = [(r["member_id"], r["topic"], r["partition"]) for r in rows if r["group_id"] == case]
        assert _placed(found) == CASES[case].expected(name), case
