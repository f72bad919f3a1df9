"""Deterministic simulation at volume: many seeded schedules through the coordinator core (issue 7).

Quick mode runs 1,000 schedules on the in-memory log and 20 on the Delta log; ``--full`` runs 10,000 and 100.
In-memory seeds are spread over worker processes (each schedule is independent and deterministic). The run prints
how many schedules ran and failed, and for each failure (up to five) its seed and a shrunk, replayable schedule.

A *campaign* is a one-off large run, ``python -m bench.simulate --schedules 100000 --campaign "why"``: it is
recorded under ``campaigns`` in ``bench/results/simulate.json``, where every later run keeps it (the seeds mean
something else once the simulator changes, so each campaign names the commit it ran on). ``--protocol consumer``
runs the campaign's schedules with members of the consumer group protocol (KIP-848, ``groupcoord.sim.consumer``)
instead of classic ones; the campaign records which.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.results_io import RESULTS_DIR, derive_checks, write_result
from groupcoord.log.delta import DeltaRecordLog
from groupcoord.sim import Summary, run_seeds, run_seeds_in_parallel
from groupcoord.sim.events import GroupProtocol

LENGTH = 40
"""Events per schedule (before settling)."""
DELTA_SEED_BASE = 1_000_000
"""Delta schedules use other seeds than the in-memory ones."""


def _workers() -> int:
    return max(1, min(4, os.cpu_count() or 1))


def _run_memory(count: int, workers: int, protocol: GroupProtocol = "classic") -> Summary:
    return run_seeds_in_parallel(range(count), workers=workers, length=LENGTH, protocol=protocol,
                                 progress=lambda so_far: _progress(so_far, count))


def _progress(so_far: Summary, count: int) -> None:
    """One line on stderr: schedules run of ``count``, failures, time left at the rate so far."""
    left = (count - so_far.ran) * so_far.seconds / max(so_far.ran, 1)
    print(f"simulate: {so_far.ran:,} of {count:,} schedules, {so_far.failed} failed, {so_far.seconds:,.0f} s, "
          f"about {left:,.0f} s left", file=sys.stderr, flush=True)


def _run_delta(count: int) -> Summary:
    with tempfile.TemporaryDirectory(prefix="groupcoord-sim-") as tmp:
        counter = itertools.count()
        return run_seeds(range(DELTA_SEED_BASE, DELTA_SEED_BASE + count),
                         lambda: DeltaRecordLog(Path(tmp) / f"log-{next(counter)}"), length=LENGTH)


def _row(log: str, summary: Summary) -> dict[str, Any]:
    return {
        "log": log, "schedules": summary.ran, "failed": summary.failed,
        "events_per_schedule": LENGTH, "coordinator_restarts": summary.restarts,
        "commits_checked": summary.commits_checked, "stale_commits_rejected": summary.stale_commits_rejected,
        "quiescent_coverage_checks": summary.quiescent_checks, "seconds": round(summary.seconds, 1),
        "schedules_per_s": round(summary.ran / summary.seconds, 1) if summary.seconds else 0.0,
    }


def _print(log: str, summary: Summary) -> None:
    print(f"simulate[{log}]: ran {summary.ran} schedules, {summary.failed} failed "
          f"{summary.by_invariant or ''} in {summary.seconds:.1f} s", flush=True)
    for report in summary.reports:
        print(report, flush=True)


def _kept_campaigns() -> list[dict[str, Any]]:
    path = RESULTS_DIR / "simulate.json"
    if not path.exists():
        return []
    campaigns: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8")).get("campaigns", [])
    return campaigns


def _commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False)
    return done.stdout.strip() or "unknown"


def main(full: bool, *, campaign: dict[str, Any] | None = None) -> None:
    """Run the schedules, print the counts and any failure, and record the result (keeping every campaign)."""
    workers = _workers()
    memory = _run_memory(10_000 if full else 1000, workers)
    delta = _run_delta(100 if full else 20)
    for log, summary in (("memory", memory), ("delta", delta)):
        _print(log, summary)
    campaigns = [*_kept_campaigns(), *([campaign] if campaign else [])]
    path = write_result(
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
    payload = json.loads(path.read_text(encoding="utf-8"))
    payload["campaigns"] = campaigns
    payload["checks"] = [check.to_json() for check in derive_checks(payload)]  # the latest campaign's check too
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n", encoding="utf-8")


def run_campaign(schedules: int, why: str, protocol: GroupProtocol = "classic") -> dict[str, Any]:
    """Run ``schedules`` in-memory schedules (seeds from 0) of the group ``protocol`` and return the campaign's
    record."""
    summary = _run_memory(schedules, _workers(), protocol)
    _print(f"memory, {protocol} protocol", summary)
    return {"why": why, "commit": _commit(), "protocol": protocol, "schedules": summary.ran, "failed": summary.failed,
            "failed_by_invariant": summary.by_invariant, "events_per_schedule": LENGTH,
            "seconds": round(summary.seconds, 1), "failed_seeds": summary.failed_seeds, "reports": summary.reports}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="bench.simulate")
    parser.add_argument("--schedules", type=int, required=True, help="in-memory schedules of the campaign")
    parser.add_argument("--campaign", required=True, help="why this campaign ran (kept in the result)")
    parser.add_argument("--protocol", choices=("classic", "consumer"), default="classic",
                        help="the group protocol of the campaign's members (consumer: KIP-848)")
    args = parser.parse_args()
    found = run_campaign(args.schedules, args.campaign, args.protocol)
    main(full=False, campaign=found)
    raise SystemExit(1 if found["failed"] else 0)
