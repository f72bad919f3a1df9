"""The coordinator's assignment runner tells the balanced assignors whether subscriptions differ."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from groupcoord.coordinator.effects import AssignmentMember, NeedsAssignment
from groupcoord.protocol.consumer_protocol import decode_assignment
from groupcoord.spark.assignment import SparkAssignmentRunner

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _needs(group_id: str, subscriptions: dict[str, tuple[str, ...]]) -> NeedsAssignment:
    return NeedsAssignment(
        group_id=group_id, generation_id=1, protocol_name="server-sticky", assignor="sticky",
        members=tuple(AssignmentMember(member_id=m, group_instance_id=None, topics=topics, owned=(), metadata=b"")
                      for m, topics in subscriptions.items()))


def _counts(spark: SparkSession, batch: list[NeedsAssignment]) -> dict[str, dict[str, int]]:
    runner = SparkAssignmentRunner(lambda: {"t1": 2, "t2": 2}, session=lambda: spark)
    counts: dict[str, dict[str, int]] = {}
    for answer in runner.assign(batch):
        assert answer.assignments is not None, answer
        counts[answer.group_id] = {
            member: sum(len(tp.partitions) for tp in decode_assignment(encoded).partitions)
            for member, encoded in answer.assignments.items()}
    return counts


@pytest.mark.spark
def test_a_heterogeneous_group_is_balanced_globally_through_the_runner(spark: SparkSession) -> None:
    """A subscribes to t1 and t2, B to t1 (two partitions each): topic by topic A would get 3 and B 1, but a t1
    partition can move to B, so the runner's answer is 2 and 2. A homogeneous group in the same batch splits 2/2."""
    counts = _counts(spark, [_needs("het", {"A": ("t1", "t2"), "B": ("t1",)}),
                             _needs("hom", {"C": ("t1", "t2"), "D": ("t2", "t1")})])
    assert counts == {"het": {"A": 2, "B": 2}, "hom": {"C": 2, "D": 2}}
