"""The coordinator's assignment runner: small buckets on the driver (no Spark at all), larger ones on Spark, with the
same answers; the balanced assignors are told whether subscriptions differ."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from groupcoord.assignment.runner import SparkAssignmentRunner
from groupcoord.coordinator.effects import AssignmentMember, NeedsAssignment
from groupcoord.protocol.consumer_protocol import TopicPartitions, decode_assignment

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

Owned = dict[str, tuple[int, ...]]


def _needs(group_id: str, subscriptions: dict[str, tuple[str, ...]], assignor: str = "sticky",
           owned: dict[str, Owned] | None = None, generation: int = 1) -> NeedsAssignment:
    return NeedsAssignment(
        group_id=group_id, generation_id=generation, protocol_name=f"server-{assignor}", assignor=assignor,
        members=tuple(AssignmentMember(
            member_id=m, group_instance_id=None, topics=topics, metadata=b"",
            owned=tuple(TopicPartitions(t, ps) for t, ps in sorted((owned or {}).get(m, {}).items())))
            for m, topics in subscriptions.items()))


def _answers(runner: SparkAssignmentRunner, batch: list[NeedsAssignment]) -> dict[str, dict[str, Owned]]:
    result: dict[str, dict[str, Owned]] = {}
    for answer in runner.assign(batch):
        assert answer.assignments is not None, answer
        result[answer.group_id] = {
            member: {tp.topic: tp.partitions for tp in decode_assignment(encoded).partitions}
            for member, encoded in answer.assignments.items()}
    return result


def _no_spark() -> SparkSession:
    raise AssertionError("the driver engine started Spark")


BATCH = [
    _needs("het", {"A": ("t1", "t2"), "B": ("t1",)}),
    _needs("hom", {"C": ("t1", "t2"), "D": ("t2", "t1")}),
    _needs("coop", {"E": ("t1",), "F": ("t1",)}, "cooperative-sticky", owned={"E": {"t1": (0, 1)}}, generation=3),
    _needs("range", {"G": ("t1", "t2"), "H": ("t2",)}, "range"),
]
EXPECTED = {
    # A on t1 and t2, B on t1 only: topic by topic A would get 3 and B 1, but a t1 partition can move to B.
    "het": {"A": {"t2": (0, 1)}, "B": {"t1": (0, 1)}},
    "hom": {"C": {"t1": (0, 1)}, "D": {"t2": (0, 1)}},
    "coop": {"E": {"t1": (0,)}, "F": {}},  # t1-1 changes owner: revoked first
    "range": {"G": {"t1": (0, 1), "t2": (0,)}, "H": {"t2": (1,)}},
}


def test_small_buckets_are_assigned_on_the_driver_without_spark() -> None:
    runner = SparkAssignmentRunner(lambda: {"t1": 2, "t2": 2}, session=_no_spark)
    assert _answers(runner, BATCH) == EXPECTED


@pytest.mark.spark
def test_spark_gives_the_driver_engines_answers(spark: SparkSession) -> None:
    """The same batch with every bucket sent to Spark (``driver_partitions=0``)."""
    session: Callable[[], SparkSession] = lambda: spark  # noqa: E731
    assert _answers(SparkAssignmentRunner(lambda: {"t1": 2, "t2": 2}, session=session, driver_partitions=0),
                    BATCH) == EXPECTED
