"""The two engines give identical rows: each assignor's DataFrame plan (one batched Spark call) and its Python
algorithm (:mod:`groupcoord.assignors.algorithms`, one group at a time), on random batches with static members,
racks, stale generations and conflicting claims. The coordinator runs small groups on the Python engine, so this is
what lets it."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from groupcoord.assignors import get_assignor
from groupcoord.assignors.algorithms import (
    BALANCED_ASSIGNORS,
    PYTHON_ASSIGNORS,
    Claim,
    Group,
    Member,
    Partition,
    assign,
)
from groupcoord.assignors.collect import to_arrow
from groupcoord.assignors.frames import MEMBER_SCHEMA, OWNED_SCHEMA, PARTITION_SCHEMA, local_frame

pytestmark = [pytest.mark.spark, pytest.mark.slow]

K = 8
SETTINGS = settings(max_examples=1, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
RACKS = ("a", "b", "c")


@dataclass(frozen=True)
class Drawn:
    """One group as both engines' input."""

    members: tuple[Member, ...]
    partitions: tuple[Partition, ...]
    claims: tuple[Claim, ...]


@st.composite
def groups(draw: st.DrawFn, *, homogeneous: bool) -> Drawn:
    topics = [f"t{i}" for i in range(draw(st.integers(1, 3)))]
    racked = draw(st.booleans())
    partitions = tuple(
        Partition(t, p, tuple(draw(st.lists(st.sampled_from(RACKS), max_size=2, unique=True))) if racked else ())
        for t in topics for p in range(draw(st.integers(1, 6))))
    names = [f"m{i}" for i in range(draw(st.integers(1, 5)))]
    members = tuple(
        Member(m, tuple(topics) if homogeneous else
               tuple(draw(st.lists(st.sampled_from([*topics, "absent"]), min_size=1, unique=True))),
               draw(st.sampled_from([None, None, f"static-{m}"])),
               draw(st.sampled_from([None, *RACKS])) if racked else None)
        for m in names)
    claims = tuple(
        Claim(draw(st.sampled_from([*names, "gone"])), p.topic, p.partition, draw(st.sampled_from([1, 1, 1, 2])))
        for p in partitions for _ in range(draw(st.sampled_from([0, 1, 1, 2]))))
    return Drawn(members, partitions, claims)


def batch(group: st.SearchStrategy[Drawn]) -> st.SearchStrategy[list[Drawn]]:
    """K groups of ``group``, at least one with more than one member: Hypothesis's first example, its simplest (one
    member per group), is rejected before any Spark work, so the one example each test runs is a random batch."""
    return st.lists(group, min_size=K, max_size=K).filter(lambda drawn: any(len(d.members) > 1 for d in drawn))


def _spark_rows(spark: SparkSession, name: str, drawn: list[Drawn]) -> set[tuple[str, str, str, int]]:
    members = [(f"g{g}", m.member_id, m.group_instance_id, list(m.topics), m.rack)
               for g, d in enumerate(drawn) for m in d.members]
    partitions = [(f"g{g}", p.topic, p.partition, list(p.racks) or None, None)
                  for g, d in enumerate(drawn) for p in d.partitions]
    owned = [(f"g{g}", c.member_id, c.topic, c.partition, c.generation) for g, d in enumerate(drawn) for c in d.claims]
    frames = (local_frame(spark, members, MEMBER_SCHEMA), local_frame(spark, partitions, PARTITION_SCHEMA),
              local_frame(spark, owned, OWNED_SCHEMA))
    # driver_partitions=0: heterogeneous calls this small would run on the driver; this test is about the Spark engine.
    assignor = get_assignor(name, driver_partitions=0) if name in BALANCED_ASSIGNORS else get_assignor(name)
    table = to_arrow(assignor.assign(*frames))
    return {(r["group_id"], r["member_id"], r["topic"], r["partition"]) for r in table.to_pylist()}


def _python_rows(name: str, drawn: list[Drawn]) -> set[tuple[str, str, str, int]]:
    rows = set()
    for g, d in enumerate(drawn):
        placed = assign(Group(d.members, d.partitions, d.claims, f"g{g}"), name)
        rows |= {(f"g{g}", member, topic, partition) for (topic, partition), member in placed.items()}
    return rows


@SETTINGS
@given(homogeneous=batch(groups(homogeneous=True)),
       mixed=batch(st.one_of(groups(homogeneous=True), groups(homogeneous=False))))
@pytest.mark.parametrize("name", PYTHON_ASSIGNORS)
def test_the_plan_and_the_python_algorithm_give_the_same_rows(spark: SparkSession, name: str, homogeneous: list[Drawn],
                                                              mixed: list[Drawn]) -> None:
    """Two calls: a batch whose groups each subscribe alike (the homogeneous plan, for the balanced assignors) and a
    batch that mixes such groups with groups whose members subscribe differently (the general plan)."""
    for drawn in (homogeneous, mixed):
        assert _spark_rows(spark, name, drawn) == _python_rows(name, drawn)
