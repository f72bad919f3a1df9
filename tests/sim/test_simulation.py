"""The seeded simulation in ``make test``: 200 + 2,000 schedules on the in-memory log, 10 on the Delta log (delta-rs).

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
from groupcoord.sim import Summary, generate, run_schedule, run_seeds, run_seeds_in_parallel

MEMORY_SEEDS = 200
DELTA_SEEDS = 10
CHUNK = 50
VOLUME_SEEDS = range(1000, 3000)
"""Seeds no other test uses (issue 26): every run of ``make test`` checks 2,000 more schedules, so that a bug which
only a few seeds in a thousand reach (as the static member's dropped topic was) fails a test, not only a benchmark."""


def _assert_clean(summary: Summary, expected: int) -> None:
    assert summary.ran == expected
    assert summary.failed == 0, (
        f"{summary.failed} of {summary.ran} schedules failed {summary.by_invariant} (seeds {summary.failed_seeds}):\n"
        + "\n\n".join(summary.reports))


@pytest.mark.parametrize("first", range(0, MEMORY_SEEDS, CHUNK), ids=lambda s: f"seeds{s}-{s + CHUNK - 1}")
def test_in_memory_schedules_keep_every_invariant(first: int) -> None:
    """50 seeds per case, 200 in all; the faults really happen (crashes, fenced commits, quiescent checks)."""
    summary = run_seeds(range(first, first + CHUNK))
    _assert_clean(summary, CHUNK)
    assert summary.restarts >= CHUNK // 2
    assert summary.stale_commits_rejected >= CHUNK // 2
    assert summary.quiescent_checks >= CHUNK


@pytest.mark.slow
def test_two_thousand_more_schedules_keep_every_invariant() -> None:
    """Seeds 1,000-2,999 over two worker processes (about 30 s on two idle cores), reporting progress per chunk."""
    seen: list[int] = []
    summary = run_seeds_in_parallel(VOLUME_SEEDS, workers=2, progress=lambda so_far: seen.append(so_far.ran))
    _assert_clean(summary, len(VOLUME_SEEDS))
    assert len(seen) > 1 and seen == sorted(seen) and seen[-1] == len(VOLUME_SEEDS)
    assert summary.restarts >= len(VOLUME_SEEDS) and summary.quiescent_checks >= len(VOLUME_SEEDS)


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
