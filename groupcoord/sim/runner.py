"""Running schedules: one (:func:`run_schedule`), many from seeds (:func:`run_seeds`), and the failure report
with a shrunk, replayable schedule (:func:`failure_report`, :func:`assert_schedule_passes`)."""

from __future__ import annotations

import logging
import multiprocessing
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field

from groupcoord.coordinator import GroupCoordinator, decode_record
from groupcoord.log.base import RecordLog
from groupcoord.log.memory import InMemoryRecordLog
from groupcoord.sim.events import GroupProtocol, Schedule
from groupcoord.sim.generator import generate
from groupcoord.sim.invariants import InvariantViolation
from groupcoord.sim.shrink import shrink
from groupcoord.sim.world import World

log = logging.getLogger("groupcoord.sim.runner")

LogFactory = Callable[[], RecordLog]

CHUNK_SEEDS = 1000
"""The most seeds :func:`run_seeds_in_parallel` hands a worker at once (how often it reports progress)."""


@dataclass(frozen=True)
class Outcome:
    """How one schedule ended: ``invariant`` is ``None`` when it passed, else the broken invariant's name
    (or ``exception:<type>`` when the core raised); ``step`` is the index of the failing event
    (``len(events)`` while settling)."""

    schedule: Schedule
    invariant: str | None = None
    message: str = ""
    step: int = -1
    restarts: int = 0
    commits_checked: int = 0
    stale_commits_rejected: int = 0
    quiescent_checks: int = 0

    @property
    def ok(self) -> bool:
        """True when every invariant held."""
        return self.invariant is None


def run_schedule(schedule: Schedule, log_factory: LogFactory = InMemoryRecordLog) -> Outcome:
    """Run ``schedule`` on a fresh log, settle, and check a full reload once more at the end."""
    world = World(schedule, log_factory())
    progress = [0]  # the index of the event being run (len(events) while settling)
    try:
        for event in schedule.events:
            world.run_event(event)
            progress[0] += 1
        world.settle()
        reloaded = GroupCoordinator(world.config)
        for record in world.log.load().records:
            reloaded.replay(decode_record(record))
        if reloaded.hard_state() != world.coordinator.hard_state():
            raise InvariantViolation("6", "a full reload of the log differs from the live hard state at the end")
    except InvariantViolation as violation:
        return _outcome(world, violation.invariant, str(violation), progress[0])
    except Exception as exc:  # the core or the log raised: a finding too, and it shrinks like one
        log.debug("schedule %s raised", schedule.seed, exc_info=True)
        return _outcome(world, f"exception:{type(exc).__name__}", f"{type(exc).__name__}: {exc}", progress[0])
    return _outcome(world, None, "", progress[0])


def _outcome(world: World, invariant: str | None, message: str, step: int) -> Outcome:
    checker = world.checker
    return Outcome(schedule=world.schedule, invariant=invariant, message=message, step=step,
                   restarts=world.restarts, commits_checked=checker.commits_checked,
                   stale_commits_rejected=checker.probes_rejected, quiescent_checks=checker.quiescent_checks)


def shrink_failure(outcome: Outcome, log_factory: LogFactory = InMemoryRecordLog, *,
                   max_runs: int = 3000) -> Outcome:
    """The outcome of the shortest schedule found that breaks the same invariant."""
    assert not outcome.ok
    smallest = shrink(outcome.schedule, lambda s: run_schedule(s, log_factory).invariant == outcome.invariant,
                      max_runs=max_runs)
    return run_schedule(smallest, log_factory)


def failure_report(original: Outcome, shrunk: Outcome | None = None) -> str:
    """What a failing run prints: the seed, the broken invariant, and a minimal schedule to replay."""
    minimal = shrunk if shrunk is not None and not shrunk.ok else original
    return "\n".join([
        f"simulation failed: seed={original.schedule.seed} protocol={original.schedule.protocol} "
        f"mode={original.schedule.mode} "
        f"at event {original.step} of {len(original.schedule.events)}",
        f"  {original.message}",
        f"minimal schedule ({len(minimal.schedule.events)} events, fails at event {minimal.step}: "
        f"{minimal.message[:300]}); replay it with groupcoord.sim.assert_schedule_passes(...):",
        f"  {minimal.schedule!r}",
    ])


def assert_schedule_passes(schedule: Schedule, log_factory: LogFactory = InMemoryRecordLog) -> Outcome:
    """Run ``schedule`` and raise ``AssertionError`` with the failure report if an invariant breaks."""
    outcome = run_schedule(schedule, log_factory)
    if not outcome.ok:
        raise AssertionError(failure_report(outcome))
    return outcome


@dataclass
class Summary:
    """Counts over many schedules, and the report of each failure."""

    ran: int = 0
    failed: int = 0
    restarts: int = 0
    commits_checked: int = 0
    stale_commits_rejected: int = 0
    quiescent_checks: int = 0
    seconds: float = 0.0
    reports: list[str] = field(default_factory=list)
    by_invariant: dict[str, int] = field(default_factory=dict)
    failed_seeds: list[int] = field(default_factory=list)
    """Every failed schedule's seed (the reports describe the first few only)."""


def run_seeds(seeds: Iterable[int], log_factory: LogFactory = InMemoryRecordLog, *, length: int = 40,
              shrink_failures: bool = True, max_reports: int = 5, protocol: GroupProtocol = "classic") -> Summary:
    """Generate and run one schedule per seed (of the group ``protocol``); shrink (and report) up to
    ``max_reports`` failures."""
    summary = Summary()
    started = time.perf_counter()
    for seed in seeds:
        outcome = run_schedule(generate(seed, length=length, protocol=protocol), log_factory)
        summary.ran += 1
        summary.restarts += outcome.restarts
        summary.commits_checked += outcome.commits_checked
        summary.stale_commits_rejected += outcome.stale_commits_rejected
        summary.quiescent_checks += outcome.quiescent_checks
        if outcome.ok:
            continue
        summary.failed += 1
        summary.failed_seeds.append(seed)
        assert outcome.invariant is not None
        summary.by_invariant[outcome.invariant] = summary.by_invariant.get(outcome.invariant, 0) + 1
        if len(summary.reports) < max_reports:
            shrunk = shrink_failure(outcome, log_factory) if shrink_failures else None
            summary.reports.append(failure_report(outcome, shrunk))
    summary.seconds = time.perf_counter() - started
    return summary


def merge_summaries(parts: Iterable[Summary], *, max_reports: int = 5) -> Summary:
    """The counts of ``parts`` added up (their reports kept up to ``max_reports``; ``seconds`` left at 0)."""
    total = Summary()
    for part in parts:
        for name in ("ran", "failed", "restarts", "commits_checked", "stale_commits_rejected", "quiescent_checks"):
            setattr(total, name, getattr(total, name) + getattr(part, name))
        total.reports.extend(part.reports[:max(max_reports - len(total.reports), 0)])
        total.failed_seeds.extend(part.failed_seeds)
        for invariant, n in part.by_invariant.items():
            total.by_invariant[invariant] = total.by_invariant.get(invariant, 0) + n
    return total


def _run_chunk(seeds: range, length: int, protocol: GroupProtocol) -> Summary:
    return run_seeds(seeds, length=length, protocol=protocol)


def run_seeds_in_parallel(seeds: range, *, workers: int, length: int = 40,
                          progress: Callable[[Summary], None] | None = None,
                          protocol: GroupProtocol = "classic") -> Summary:
    """:func:`run_seeds` on the in-memory log, the seeds spread over ``workers`` processes (each schedule is
    independent and deterministic, so the counts equal one process's). Workers are spawned, not forked: the caller
    may hold a JVM or threads that a fork would copy half-way.

    ``progress`` is called with the counts so far each time a chunk of at most :data:`CHUNK_SEEDS` seeds ends."""
    size = max(min(len(seeds) // (workers * 4), CHUNK_SEEDS), 1)
    chunks = [seeds[start:start + size] for start in range(0, len(seeds), size)]
    started = time.perf_counter()
    done: dict[int, Summary] = {}
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(_run_chunk, chunk, length, protocol): i for i, chunk in enumerate(chunks)}
        for future in as_completed(futures):
            done[futures[future]] = future.result()
            if progress is not None:
                so_far = merge_summaries(done.values())
                so_far.seconds = time.perf_counter() - started
                progress(so_far)
    total = merge_summaries(done[i] for i in range(len(chunks)))  # in seed order, whichever chunk ended first
    total.seconds = time.perf_counter() - started
    return total
