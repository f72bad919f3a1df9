"""SIGKILL the coordinator during a 100-member rebalance: the standby takes over, every member ends up stable under
it, and no acknowledged commit is lost (the scenario is :func:`bench.failover.run_failover`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.failover import run_failover

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.faults]


def test_kill_during_a_100_member_rebalance_recovers_under_the_standby_without_losing_commits(
    tmp_path: Path,
) -> None:
    outcome = run_failover(tmp_path, members=100, timeout=90)
    assert outcome.state_at_kill in ("PreparingRebalance", "CompletingRebalance")
    assert outcome.recovery_s is not None, "the members never became stable under the standby"
    # lease timeout 3 s + safety 1 s after the last renewal, plus load and readiness on 2 shared cores
    assert outcome.takeover_s < 20
    assert outcome.stable_members_after == 101
    assert outcome.generation_after > outcome.generation_before
    assert outcome.commits_acknowledged > 0 and outcome.partitions_committed > 0
    assert outcome.lost_commits == {}, f"acknowledged commits lost: {outcome.lost_commits}"
