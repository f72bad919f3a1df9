"""Deterministic simulation at volume: many seeded schedules through the coordinator core (issue 7).

Quick mode runs 1,000 schedules on the in-memory log and 20 on the Delta log; ``--full`` runs 10,000 and 100.
In-memory seeds are spread over worker processes (each schedule is independent and deterministic). The run prints
how many schedules ran and failed, and for each failure (up to five) its seed and a shrunk, replayable schedule.
"""

from __future__ import annotations

import itertools
import os
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from bench.results_io import write_result
from groupcoord.log.delta import DeltaRecordLog
from groupcoord.sim import Summary, run_seeds

LENGTH = 40
"""Events per schedule (before settling)."""
DELTA_SEED_BASE = 1_000_000
"""Delta schedules use other seeds than the in-memory ones."""


def _memory_chunk(seeds: range) -> Summary:
    return run_seeds(seeds, length=LENGTH)


def _run_memory(count: int, workers: int) -> Summary:
    size = max(count // (workers * 4), 1)
    chunks = [range(start, min(start + size, count)) for start in range(0, count, size)]
    total = Summary()
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for part in pool.map(_memory_chunk, chunks):
            _add(total, part)
    total.seconds = time.perf_counter() - started
    return total


def _run_delta(count: int) -> Summary:
    with tempfile.TemporaryDirectory(prefix="groupcoord-sim-") as tmp:
        counter = itertools.count()
        return run_seeds(range(DELTA_SEED_BASE, DELTA_SEED_BASE + count),
                         lambda: DeltaRecordLog(Path(tmp) / f"log-{next(counter)}"), length=LENGTH)


def _add(total: Summary, part: Summary) -> None:
    for name in ("ran", "failed", "restarts", "commits_checked", "stale_commits_rejected", "quiescent_checks"):
        setattr(total, name, getattr(total, name) + getattr(part, name))
    total.reports.extend(part.reports[:max(5 - len(total.reports), 0)])
    for invariant, n in part.by_invariant.items():
        total.by_invariant[invariant] = total.by_invariant.get(invariant, 0) + n


def _row(log: str, summary: Summary) -> dict[str, Any]:
    return {
        "log": log, "schedules": summary.ran, "failed": summary.failed,
        "events_per_schedule": LENGTH, "coordinator_restarts": summary.restarts,
        "commits_checked": summary.commits_checked, "stale_commits_rejected": summary.stale_commits_rejected,
        "quiescent_coverage_checks": summary.quiescent_checks, "seconds": round(summary.seconds, 1),
        "schedules_per_s": round(summary.ran / summary.seconds, 1) if summary.seconds else 0.0,
    }


def main(full: bool) -> None:
    """Run the schedules, print the counts and any failure, and record the result."""
    workers = max(1, min(4, os.cpu_count() or 1))
    memory = _run_memory(10_000 if full else 1000, workers)
    delta = _run_delta(100 if full else 20)
    for log, summary in (("memory", memory), ("delta", delta)):
        print(f"simulate[{log}]: ran {summary.ran} schedules, {summary.failed} failed "
              f"{summary.by_invariant or ''} in {summary.seconds:.1f} s", flush=True)
        for report in summary.reports:
            print(report, flush=True)
    write_result(
        "simulate",
        title="Deterministic simulation (issue 7): seeded fault schedules, six invariants checked after every event",
        rows=[_row("memory", memory), _row("delta", delta)],
        summary={
            "schedules_ran": memory.ran + delta.ran,
            "schedules_failed": memory.failed + delta.failed,
            "failed_by_invariant": {**memory.by_invariant, **delta.by_invariant},
            "targets": {"schedules_ran": ">= 10000 (full)", "schedules_failed": "0"},
        },
        notes=f"{workers} worker processes for the in-memory log, one process for the Delta log (local disk). "
        "Each schedule: 2-5 members (eager or cooperative), 1-2 topics, 40 random events (joins, leaves, GC pauses, "
        "subscription changes, commits with current/stale/future generations, partition growth, coordinator "
        "crashes before/after a batch is durable or idle, snapshots, clock jumps), then settling to quiescence. "
        "Machine shared by ~8 engineers: throughput here is a lower bound.",
    )
