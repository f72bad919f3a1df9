"""The simulator's vocabulary: one frozen dataclass per event, and :class:`Schedule`, a replayable run.

Events name members by a short label (``"m0"``). An event whose member is in the wrong state (a ``Leave`` of a
member that never joined, a ``Resume`` of a member that is not paused) does nothing, so any sub-list of a
schedule is itself a valid schedule: the shrinker relies on that. ``repr`` of a schedule is Python that rebuilds it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

CrashPoint = Literal["idle", "before-commit", "after-commit"]
"""Where a coordinator crash lands: between requests; after a batch was built but before it is durable (its
records are lost and its responses never sent); or after it is durable but before any response is sent."""

GroupProtocol = Literal["classic", "consumer"]
"""The group protocol every member of a schedule speaks: the classic one (JoinGroup, SyncGroup; ``Schedule.mode``
says eager or cooperative) or KIP-848's consumer protocol (ConsumerGroupHeartbeat; the coordinator assigns and
members reconcile, so ``mode`` does not apply)."""

Mode = Literal["eager", "cooperative"]
"""The members' rebalance protocol: eager revokes everything before rejoining; cooperative (KIP-429) keeps what
it owns and revokes only what moves, in a follow-up rebalance."""


@dataclass(frozen=True)
class Join:
    """A member process starts (or a departed one restarts afresh) and joins with a subscription to ``topics``."""

    member: str
    topics: tuple[str, ...]


@dataclass(frozen=True)
class Leave:
    """The member closes: it commits, revokes and sends LeaveGroup (a consumer-protocol member heartbeats with
    epoch -1, or -2 when static: a temporary leave). A paused member is killed silently instead."""

    member: str


@dataclass(frozen=True)
class Pause:
    """The member's process stops (a GC pause): no heartbeats, responses pile up unread."""

    member: str


@dataclass(frozen=True)
class Resume:
    """A paused member runs again: it reads what piled up, then heartbeats."""

    member: str


@dataclass(frozen=True)
class Stall:
    """The member's application thread stops (a long record batch) while its heartbeat thread runs on, until a
    ``Resume``: heartbeats keep the membership and report what it owns, but nothing is revoked or taken meanwhile,
    so a revocation waits (and past the rebalance timeout the member leaves, or is fenced). Only members of the
    consumer protocol have such a thread: for a classic member it does nothing."""

    member: str


@dataclass(frozen=True)
class Restart:
    """The member's process is replaced by a new one while the old one hangs (paused) as a zombie named
    ``"<member>~"``; a later ``Resume("<member>~")`` wakes the zombie, which must be fenced.

    An old process that never received a member id is killed instead: resumed, it would be a second live process
    with the same ``group.instance.id`` (a misconfiguration KIP-345 does not defend against: it joins as a new
    process, takes the instance over, and the other learns it is fenced only at its next request)."""

    member: str


@dataclass(frozen=True)
class Subscribe:
    """The member changes its subscription and rejoins."""

    member: str
    topics: tuple[str, ...]


@dataclass(frozen=True)
class Commit:
    """An offset commit from the member: ``shift`` 0 commits its positions with its own generation; -1 and +1 send a
    probe with the group's current generation minus or plus one, which the coordinator must reject. A member of the
    consumer protocol probes with its member epoch (as the coordinator has it) plus one; with -1 it commits its
    positions at its previous epoch, which Kafka accepts partition by partition (KIP-1251)."""

    member: str
    shift: int = 0


@dataclass(frozen=True)
class Grow:
    """``topic`` grows to ``partitions`` partitions (never shrinks); the coordinator hears of it."""

    topic: str
    partitions: int


@dataclass(frozen=True)
class Crash:
    """The coordinator process dies at ``point``; a new one loads the log (replay + ``on_loaded``)."""

    point: CrashPoint = "idle"


@dataclass(frozen=True)
class Snapshot:
    """The host writes a log snapshot of the hard state (later loads start from it)."""


@dataclass(frozen=True)
class Tick:
    """``ms`` pass normally: members heartbeat, consume and commit on their intervals; timers fire on time."""

    ms: int


@dataclass(frozen=True)
class Jump:
    """The clock jumps ``ms`` ahead at once: the coordinator's timers fire before any member can act."""

    ms: int


Event = (Join | Leave | Pause | Resume | Restart | Subscribe | Commit | Grow | Crash | Snapshot | Tick | Jump
         | Stall)


@dataclass(frozen=True)
class Schedule:
    """One simulated run: the members' protocol, the initial topics and the events, in order. ``static`` members
    join with ``group.instance.id`` = their name (KIP-345). ``protocol`` is the group protocol (classic unless
    said, so a schedule written before consumer groups were simulated means what it meant).

    ``seed`` only records where the schedule came from; running it never draws random numbers.
    """

    seed: int
    mode: Mode
    topics: tuple[tuple[str, int], ...]
    events: tuple[Event, ...]
    static: bool = False
    protocol: GroupProtocol = "classic"

    def with_events(self, events: tuple[Event, ...]) -> Schedule:
        """The same schedule with other events (for shrinking)."""
        return replace(self, events=events)
