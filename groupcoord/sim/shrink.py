"""Shrinking a failing schedule to a short one that fails the same way (delta debugging over the event list).

Chunks of events are removed, halving the chunk size whenever no chunk can go; then each Tick and Jump is
shortened. Every candidate is a valid schedule (see :mod:`groupcoord.sim.events`), so only the failure decides.
"""

from __future__ import annotations

from collections.abc import Callable

from groupcoord.sim.events import Event, Jump, Schedule, Tick


def shrink(schedule: Schedule, fails: Callable[[Schedule], bool], *, max_runs: int = 3000) -> Schedule:
    """The smallest schedule found (within ``max_runs`` runs) for which ``fails`` still holds."""
    runs = 0

    def still_fails(events: list[Event]) -> bool:
        nonlocal runs
        if runs >= max_runs:
            return False
        runs += 1
        return fails(schedule.with_events(tuple(events)))

    events = list(schedule.events)
    chunk = max(len(events) // 2, 1)
    while chunk >= 1 and runs < max_runs:
        removed_any = False
        start = 0
        while start < len(events):
            candidate = events[:start] + events[start + chunk:]
            if candidate and still_fails(candidate):
                events = candidate
                removed_any = True
            else:
                start += chunk
        if not removed_any:
            chunk //= 2
    for index, event in enumerate(events):
        if isinstance(event, Tick | Jump):
            ms = event.ms
            while ms > 100:
                shorter = type(event)(ms // 2)
                candidate = [*events[:index], shorter, *events[index + 1:]]
                if not still_fails(candidate):
                    break
                events, ms = candidate, ms // 2
    return schedule.with_events(tuple(events))
