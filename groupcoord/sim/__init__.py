"""Deterministic fault simulation of the coordinator core (issue 7): seeded schedules of member, clock, topic and
coordinator-crash events, simulated eager and cooperative members, six invariants checked after every step, and a
shrinker that turns a failure into a short, replayable schedule.

Consumer groups (KIP-848, issue 30) run the same events with ``Schedule(protocol="consumer")``: members of the
consumer protocol (:mod:`groupcoord.sim.consumer`), the world as the shell that computes target assignments, and
invariants 7-11 (:mod:`groupcoord.sim.consumer_invariants`) besides 2, 3 and 6."""

from __future__ import annotations

from groupcoord.sim.events import (
    Commit,
    Crash,
    Event,
    Grow,
    Join,
    Jump,
    Leave,
    Pause,
    Restart,
    Resume,
    Schedule,
    Snapshot,
    Stall,
    Subscribe,
    Tick,
)
from groupcoord.sim.generator import generate
from groupcoord.sim.invariants import InvariantViolation
from groupcoord.sim.runner import (
    Outcome,
    Summary,
    assert_schedule_passes,
    failure_report,
    merge_summaries,
    run_schedule,
    run_seeds,
    run_seeds_in_parallel,
    shrink_failure,
)
from groupcoord.sim.shrink import shrink

__all__ = [
    "Commit",
    "Crash",
    "Event",
    "Grow",
    "InvariantViolation",
    "Join",
    "Jump",
    "Leave",
    "Outcome",
    "Pause",
    "Restart",
    "Resume",
    "Schedule",
    "Snapshot",
    "Stall",
    "Subscribe",
    "Summary",
    "Tick",
    "assert_schedule_passes",
    "failure_report",
    "generate",
    "merge_summaries",
    "run_schedule",
    "run_seeds",
    "run_seeds_in_parallel",
    "shrink",
    "shrink_failure",
]
