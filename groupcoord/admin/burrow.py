"""Burrow's consumer-lag evaluation rules over a window of checkpoints (pure).

A partition is judged on its observations in the last ``spark.groupcoord.checkpoint.window`` checkpoint runs, oldest
first. Each observation has the committed offset, the lag at that run, and the time of the commit. With
``now`` the time of the newest run, the rules are applied in this order:

1. the newest lag is zero: ``OK`` (a caught-up consumer is never in trouble);
2. ``now - last commit > last commit - first commit``: ``STOP`` (the consumer stopped committing: the silence is
   longer than the span of commits the window saw);
3. the lag was zero somewhere in the window: ``OK``;
4. the committed offset went backwards somewhere: ``REWIND``;
5. the committed offset never moved (while commits kept coming): ``STALL``;
6. the lag never went down between two runs: ``WARN`` (the consumer moves but falls behind);
7. otherwise ``OK``.

A group's status is its worst partition's, as Burrow reports it: ``WARN`` if the worst is ``WARN``, ``ERR`` if the
worst is ``STOP``, ``STALL`` or ``REWIND``; :class:`GroupStatus` keeps the worst partition status too. Fewer than two
observations only ever give ``OK`` (nothing to compare yet).

Example (lag over four runs, offsets moving, commits recent): ``10, 12, 12, 15`` -> ``WARN``; ``10, 12, 0, 3`` ->
``OK``.
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

PartitionStatus = Literal["OK", "WARN", "STOP", "STALL", "REWIND"]
"""The status of one partition."""

Status = Literal["OK", "WARN", "ERR"]
"""The status of a group."""

SEVERITY: dict[PartitionStatus, int] = {"OK": 0, "WARN": 1, "STOP": 2, "STALL": 3, "REWIND": 4}
"""Partition statuses from best to worst (Burrow's order)."""


@dataclass(frozen=True)
class Observation:
    """A partition at one checkpoint run: committed ``offset``, ``lag`` against the log-end, and ``commit_time``."""

    run_time: dt.datetime
    offset: int
    lag: int
    commit_time: dt.datetime | None


@dataclass(frozen=True)
class GroupStatus:
    """A group's status and the worst status among its partitions."""

    status: Status
    worst_partition: PartitionStatus


def partition_status(window: Sequence[Observation]) -> PartitionStatus:
    """Burrow's status of one partition from its observations, oldest first (see the module docs)."""
    if len(window) < 2 or window[-1].lag == 0:
        return "OK"
    if _stopped(window):
        return "STOP"
    if any(o.lag == 0 for o in window):
        return "OK"
    pairs = list(itertools.pairwise(window))
    if any(later.offset < earlier.offset for earlier, later in pairs):
        return "REWIND"
    if all(later.offset == earlier.offset for earlier, later in pairs):
        return "STALL"
    if all(later.lag >= earlier.lag for earlier, later in pairs):
        return "WARN"
    return "OK"


def group_status(statuses: Iterable[PartitionStatus]) -> GroupStatus:
    """The group's status from its partitions' (a group without partitions is ``OK``)."""
    worst: PartitionStatus = max(statuses, key=SEVERITY.__getitem__, default="OK")
    status: Status = "OK" if worst == "OK" else "WARN" if worst == "WARN" else "ERR"
    return GroupStatus(status, worst)


def _stopped(window: Sequence[Observation]) -> bool:
    times = [o.commit_time for o in window]
    first, last = times[0], times[-1]
    if first is None or last is None:
        return False
    return window[-1].run_time - last > last - first
