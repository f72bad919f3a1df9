"""The seeded simulation in ``make test``: 200 + 2,000 classic schedules and 150 consumer-group (KIP-848) schedules
on the in-memory log, 10 classic and 1 consumer-group one on the Delta log (delta-rs).

Each schedule mixes joins, leaves, GC pauses, subscription changes, commits with current, stale and future
generations, partition growth, coordinator crashes at record boundaries and clock jumps; the six invariants of
issue 7 are checked after every event (see ``groupcoord/sim/invariants.py``). A failure prints its seed and a
shrunk schedule that replays it with ``assert_schedule_passes``. Consumer-group schedules are the same events for
members of the consumer protocol, checked against invariants 7-11 (``groupcoord/sim/consumer_invariants.py``)
besides 2, 3 and 6.
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

CONSUMER_SEEDS = range(20_000, 20_150)
"""Seeds no other test uses, for consumer-group schedules (the same seed as a classic schedule would give the same
events; these seeds are not run as classic ones)."""
CONSUMER_CHUNK = 50


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


@pytest.mark.parametrize("first", CONSUMER_SEEDS[::CONSUMER_CHUNK],
                         ids=lambda s: f"seeds{s}-{s + CONSUMER_CHUNK - 1}")
def test_consumer_group_schedules_keep_every_invariant(first: int) -> None:
    """50 consumer-protocol seeds per case, 150 in all: members join, heartbeat, reconcile (revoking first), leave
    (static ones with epoch -2), pause past their session, are replaced, change subscriptions; topics grow; the
    coordinator crashes at record boundaries; and the faults really happen."""
    summary = run_seeds(range(first, first + CONSUMER_CHUNK), protocol="consumer")
    _assert_clean(summary, CONSUMER_CHUNK)
    assert summary.restarts >= CONSUMER_CHUNK
    assert summary.stale_commits_rejected >= CONSUMER_CHUNK // 2
    assert summary.quiescent_checks >= CONSUMER_CHUNK * 5


def test_delta_log_schedules_keep_every_invariant(tmp_path: Path) -> None:
    """The same simulation persisting to real Delta tables: every batch a conditional commit, every restart a
    load of the table (latest snapshot plus tail)."""
    counter = itertools.count()
    summary = run_seeds(range(10_000, 10_000 + DELTA_SEEDS),
                        lambda: DeltaRecordLog(tmp_path / f"log-{next(counter)}"), length=30)
    _assert_clean(summary, DELTA_SEEDS)
    assert summary.restarts > 0


def test_delta_log_consumer_group_schedules_keep_every_invariant(tmp_path: Path) -> None:
    """A consumer-group schedule on real Delta tables (a seed of its own, with two coordinator restarts): the
    consumer-group records through the Delta codec, and every restart a load of the table."""
    counter = itertools.count()
    summary = run_seeds(range(30_002, 30_003), lambda: DeltaRecordLog(tmp_path / f"log-{next(counter)}"), length=30,
                        protocol="consumer")
    _assert_clean(summary, 1)
    assert summary.restarts > 0


def test_a_seed_always_gives_the_same_schedule_and_the_same_run() -> None:
    """Determinism: no wall clock, no unseeded randomness anywhere in a run."""
    assert generate(7) == generate(7)
    assert generate(7) != generate(8)
    first, second = run_schedule(generate(7)), run_schedule(generate(7))
    assert first == second and first.ok
    assert first.commits_checked > 0
    consumer = generate(7, protocol="consumer")
    assert consumer.protocol == "consumer" and consumer == generate(7, protocol="consumer")
    assert generate(7).protocol == "classic"
    assert run_schedule(consumer) == run_schedule(consumer)
