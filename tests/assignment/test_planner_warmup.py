"""The planner warm-up (issue 16/20): every assignor on the synthetic small group, fresh and after a rebalance, through
the runner's own path; it gives way to a real assignment, and the real assignment's answer is unaffected."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import pytest

from groupcoord.assignment.runner import SparkAssignmentRunner
from groupcoord.assignment.warmup import WARMUP_ORDER, WARMUP_PARTITIONS, plans_to_warm, synthetic_groups, warm_up
from groupcoord.assignors.engine import DRIVER_PARTITIONS
from groupcoord.coordinator.effects import AssignmentMember, NeedsAssignment
from groupcoord.protocol.consumer_protocol import decode_assignment

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def test_synthetic_groups_are_a_fresh_group_then_a_rebalance_with_owned_partitions() -> None:
    """The second generation keeps two members' deals and adds a member that owns nothing."""
    fresh, rebalance = synthetic_groups("sticky")
    assert [m.owned for m in fresh.members] == [(), (), ()]
    owned = [p for m in rebalance.members for tp in m.owned for p in tp.partitions]
    assert len(owned) == 2 * WARMUP_PARTITIONS // 3 and len(set(owned)) == len(owned)
    assert (fresh.generation_id, rebalance.generation_id) == (1, 2)


def test_a_job_warms_only_the_plans_its_assignors_run_on_spark() -> None:
    """A job's coordinator whose groups offer driver-assigned protocols warms nothing (its Spark jobs would take the
    job's task slots); ``weighted`` always runs on Spark; past the driver's threshold the balanced ones do too;
    leader-side assignors are not the coordinator's; an unknown set (``serve``) warms the default order."""
    assert plans_to_warm(("server-cooperative-sticky", "range"), 12) == ()
    assert plans_to_warm(("server-weighted", "server-range"), 12) == ("weighted",)
    assert plans_to_warm(("server-cooperative-sticky", "server-sticky"), DRIVER_PARTITIONS + 1) == (
        "cooperative-sticky", "sticky")
    assert plans_to_warm(("cooperative-sticky",), DRIVER_PARTITIONS + 1) == ()
    assert plans_to_warm(None, 12) == WARMUP_ORDER


def test_warm_up_runs_every_assignor_twice(spark: SparkSession) -> None:
    """Twelve calls on a real session, none failing (a failure would end the warm-up early); a context warmed once
    is not warmed again."""
    runner = SparkAssignmentRunner(dict, session=lambda: spark)
    assert runner.warm_up(again=True) == 2 * len(WARMUP_ORDER)
    assert SparkAssignmentRunner(dict, session=lambda: spark).warm_up() == 0


def test_warm_up_waits_while_busy_and_ends_when_stopped() -> None:
    """Between two calls the warm-up waits while ``busy`` and ends once ``stopped``; a failing call ends it too."""
    calls: list[NeedsAssignment] = []
    polls = iter([True, True, False] + [False] * 20)
    assert warm_up(calls.append, busy=lambda: next(polls), pause_s=0) == 2 * len(WARMUP_ORDER)
    assert warm_up(calls.append, busy=lambda: False, stopped=lambda: len(calls) >= 2 * len(WARMUP_ORDER) + 3) == 3

    def failing(effect: NeedsAssignment) -> None:
        raise RuntimeError("no Spark")

    assert warm_up(failing, busy=lambda: False) == 0


def test_a_real_assignment_during_the_warm_up_gets_its_own_answer(spark: SparkSession) -> None:
    """A real call on Spark waits for the warm-up call under way (one assignment at a time), then is answered as
    usual."""
    runner = SparkAssignmentRunner(lambda: {"orders": 4}, session=lambda: spark, driver_partitions=0)
    warming = threading.Thread(target=runner.warm_up, kwargs={"again": True})
    warming.start()
    members = tuple(AssignmentMember(member_id=f"c{i}", group_instance_id=None, topics=("orders",), owned=(),
                                     metadata=b"") for i in range(2))
    (answer,) = runner.assign([NeedsAssignment(group_id="g", generation_id=1, protocol_name="server-range",
                                               assignor="range", members=members)])
    runner.stop_warm_up()
    warming.join(120)
    assert not warming.is_alive()
    assert answer.assignments is not None
    owned = {m: decode_assignment(a).partitions[0].partitions for m, a in answer.assignments.items()}
    assert owned == {"c0": (0, 1), "c1": (2, 3)}
