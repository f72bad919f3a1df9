"""The seeded simulation in ``make test``: 200 schedules on the in-memory log, 10 on the Delta log (delta-rs).

Each schedule mixes joins, leaves, GC pauses, subscription changes, commits with current, stale and future
generations, partition growth, coordinator crashes at record boundaries and clock jumps; the six invariants of
issue 7 are checked after every event (see ``groupcoord/sim/invariants.py``). A failure prints its seed and a
shrunk schedule that replays it with ``assert_schedule_passes``.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from groupcoord.log.delta import DeltaRecordLog
from groupcoord.sim import Summary, generate, run_schedule, run_seeds

MEMORY_SEEDS = 200
DELTA_SEEDS = 10
CHUNK = 50


def _assert_clean(summary: Summary, expected: int) -> None:
    assert summary.ran == expected
    assert summary.failed == 0, f"{summary.failed} of {summary.ran} schedules failed {summary.by_invariant}:\n" + (
        "\n\n".join(summary.reports))


@pytest.mark.parametrize("first", range(0, MEMORY_SEEDS, CHUNK), ids=lambda s: f"seeds{s}-{s + CHUNK - 1}")
def test_in_memory_schedules_keep_every_invariant(first: int) -> None:
    """50 seeds per case, 200 in all; the faults really happen (crashes, fenced commits, quiescent checks)."""
    summary = run_seeds(range(first, first + CHUNK))
    _assert_clean(summary, CHUNK)
    assert summary.restarts >= CHUNK // 2
    assert summary.stale_commits_rejected >= CHUNK // 2
    assert summary.quiescent_checks >= CHUNK


def test_delta_log_schedules_keep_every_invariant(tmp_path: Path) -> None:
    """The same simulation persisting to real Delta tables: every batch a conditional commit, every restart a
    load of the table (latest snapshot plus tail)."""
    counter = itertools.count()
    summary = run_seeds(range(10_000, 10_000 + DELTA_SEEDS),
                        lambda: DeltaRecordLog(tmp_path / f"log-{next(counter)}"), length=30)
    _assert_clean(summary, DELTA_SEEDS)
    assert summary.restarts > 0


def test_a_seed_always_gives_the_same_schedule_and_the_same_run() -> None:
    """Determinism: no wall clock, no unseeded randomness anywhere in a run."""
    assert generate(7) == generate(7)
    assert generate(7) != generate(8)
    first, second = run_schedule(generate(7)), run_schedule(generate(7))
    assert first == second and first.ok
    assert first.commits_checked > 0
