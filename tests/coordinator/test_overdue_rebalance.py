"""A rebalance that outlives its rebalance timeout logs one WARNING line naming what the group waits for (issue 16);
a rebalance that ends in time logs none."""

from __future__ import annotations

import logging

import pytest

from groupcoord.coordinator import CompleteAssignment
from groupcoord.coordinator.effects import NeedsAssignment, newest_per_group
from groupcoord.group import GroupState

from .context import REBALANCE_MS, CoordinatorTestContext, protocols, round_robin
from .test_static_membership import LONG_SESSION_MS, _static_group

OVERDUE_LOGGER = "groupcoord.coordinator.overdue"


def _overdue_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == OVERDUE_LOGGER and r.levelno == logging.WARNING]


def _server_side_group(ctx: CoordinatorTestContext, count: int) -> tuple[list[str], int]:
    tokens = [ctx.join_new("s", protos=protocols("server-range", topics=("t",)), session_ms=LONG_SESSION_MS)[1]
              for _ in range(count)]
    ctx.sleep_until_answered(tokens)
    responses = ctx.assert_all_joined(tokens)
    return [r.member_id for r in responses], responses[0].generation_id


def test_server_side_assignment_that_never_comes_is_reported_once_per_timeout(
        ctx: CoordinatorTestContext, caplog: pytest.LogCaptureFixture) -> None:
    """Every member waits in SyncGroup for the shell's assignment: one line at the timeout, one more per timeout."""
    caplog.set_level(logging.WARNING, OVERDUE_LOGGER)
    members, generation = _server_side_group(ctx, 2)
    for member in members:
        ctx.sync("s", generation, member)
    ctx.sleep(REBALANCE_MS - 1)
    assert _overdue_lines(caplog) == []
    ctx.sleep(1)
    (line,) = _overdue_lines(caplog)
    assert "CompletingRebalance" in line and f"server-side assignment (server-range) of generation {generation}" in line
    ctx.sleep(REBALANCE_MS)
    assert len(_overdue_lines(caplog)) == 2
    ctx.complete_assignment(CompleteAssignment(group_id="s", generation_id=generation,
                                               assignments=round_robin(members, {"t": 4})))
    assert ctx.group("s").state == GroupState.STABLE
    ctx.sleep(3 * REBALANCE_MS)
    assert len(_overdue_lines(caplog)) == 2


def test_static_member_that_does_not_rejoin_is_named(ctx: CoordinatorTestContext,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    """The join phase is extended for a static member that did not rejoin: the warning names it."""
    caplog.set_level(logging.WARNING, OVERDUE_LOGGER)
    leader, follower, _ = _static_group(ctx)
    ctx.join("g", leader, instance_id="i-1", session_ms=LONG_SESSION_MS, protos=protocols("range", topics=("u",)))
    assert ctx.group("g").state == GroupState.PREPARING_REBALANCE
    ctx.sleep(REBALANCE_MS)
    (line,) = _overdue_lines(caplog)
    assert "PreparingRebalance" in line and follower in line and leader not in line


def test_rebalance_that_completes_in_time_logs_nothing(ctx: CoordinatorTestContext,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    """A group whose stragglers are dropped by the join timer is not overdue."""
    caplog.set_level(logging.WARNING, OVERDUE_LOGGER)
    ctx.stable_group("g", 2)
    ctx.join_new("g")
    ctx.sleep(2 * REBALANCE_MS)
    assert _overdue_lines(caplog) == []


def test_one_batch_keeps_only_the_newest_generation_of_each_group() -> None:
    """Effects that piled up during a slow assignment hold two generations of one group: only the newest is run
    (two in one batched call made the group's members duplicates and failed the whole batch)."""
    def effect(group: str, generation: int) -> NeedsAssignment:
        return NeedsAssignment(group_id=group, generation_id=generation, protocol_name="server-range",
                               assignor="range", members=())

    batch = [effect("a", 1), effect("b", 4), effect("a", 2), effect("b", 3)]
    assert newest_per_group(batch) == [effect("a", 2), effect("b", 4)]
