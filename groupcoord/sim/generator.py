"""Random schedules from a seed: the same seed always gives the same schedule.

A light model of who is running and who is paused steers the choices towards events that do something (a Resume
goes to a paused member), but any event list is valid: events on members in the wrong state do nothing.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from groupcoord.sim.events import (
    Commit,
    Crash,
    Event,
    GroupProtocol,
    Grow,
    Join,
    Jump,
    Leave,
    Mode,
    Pause,
    Restart,
    Resume,
    Schedule,
    Snapshot,
    Stall,
    Subscribe,
    Tick,
)

MAX_PARTITIONS = 12
"""Topics never grow past this many partitions (keeps schedules fast)."""


class _Draft:
    """The generator's picture of the world while it writes events."""

    def __init__(self, rng: random.Random, names: list[str], topics: dict[str, int]) -> None:
        self.rng = rng
        self.names = names
        self.topics = topics
        self.running: set[str] = set()
        self.paused: set[str] = set()

    def subscription(self) -> tuple[str, ...]:
        names = sorted(self.topics)
        return tuple(sorted(self.rng.sample(names, self.rng.randint(1, len(names)))))

    def pick(self, pool: set[str]) -> str | None:
        return self.rng.choice(sorted(pool)) if pool else None

    # --- one generator per kind of event; None when it does not apply now ----------------------------------
    def join(self) -> Event | None:
        name = self.pick(set(self.names) - self.running)
        if name is None:
            return None
        self.running.add(name)
        return Join(name, self.subscription())

    def leave(self) -> Event | None:
        name = self.pick(self.running)
        if name is None:
            return None
        self.running.discard(name)
        self.paused.discard(name)
        return Leave(name)

    def pause(self) -> Event | None:
        name = self.pick(self.running - self.paused)
        if name is None:
            return None
        self.paused.add(name)
        return Pause(name)

    def resume(self) -> Event | None:
        name = self.pick(self.paused)
        if name is None:
            return None
        self.paused.discard(name)
        return Resume(name)

    def restart(self) -> Event | None:
        name = self.pick(self.running - self.paused)
        if name is None:
            return None
        self.paused.add(name + "~")
        return Restart(name)

    def stall(self) -> Event | None:
        name = self.pick(self.running - self.paused)
        if name is None:
            return None
        self.paused.add(name)  # a Resume ends it
        return Stall(name)

    def subscribe(self) -> Event | None:
        name = self.pick(self.running - self.paused)
        return None if name is None or len(self.topics) < 2 else Subscribe(name, self.subscription())

    def commit(self) -> Event | None:
        name = self.pick(self.running - self.paused)
        return None if name is None else Commit(name, 0)

    def probe(self) -> Event | None:
        name = self.pick(self.running - self.paused)
        return None if name is None else Commit(name, self.rng.choice((-1, 1)))

    def grow(self) -> Event | None:
        topic = self.rng.choice(sorted(self.topics))
        if self.topics[topic] >= MAX_PARTITIONS:
            return None
        self.topics[topic] = min(MAX_PARTITIONS, self.topics[topic] + self.rng.randint(1, 3))
        return Grow(topic, self.topics[topic])

    def crash(self) -> Event:
        return Crash(self.rng.choice(("idle", "before-commit", "after-commit")))

    def snapshot(self) -> Event:
        return Snapshot()

    def tick(self) -> Event:
        return Tick(self.rng.choice((100, 500, 1000, 2000, 3000, 3000, 5000, 8000)))

    def long_tick(self) -> Event:
        """Long enough for sessions (10 s) or rebalance timeouts (30 s) to run out."""
        return Tick(self.rng.choice((11_000, 15_000, 31_000)))

    def jump(self) -> Event:
        return Jump(self.rng.choice((2000, 6000, 12_000, 40_000)))


def generate(seed: int, *, length: int = 40, mode: Mode | None = None,
             protocol: GroupProtocol = "classic") -> Schedule:
    """The schedule of ``seed``: eager or cooperative, static members in 30% of schedules, 1-2 topics, 2-5 member
    names, a few joins, then random events up to ``length``. ``protocol`` is not drawn, so classic seeds keep the
    schedules they always had; under ``"consumer"`` the drawn mode does not apply, and ``Stall`` events are drawn
    too."""
    rng = random.Random(seed)
    modes: tuple[Mode, Mode] = ("eager", "cooperative")
    chosen = mode if mode is not None else rng.choice(modes)
    static = rng.random() < 0.3
    topics = {"t0": rng.randint(1, 6)}
    if rng.random() < 0.5:
        topics["t1"] = rng.randint(1, 4)
    initial = tuple(sorted(topics.items()))
    draft = _Draft(rng, [f"m{i}" for i in range(rng.randint(2, 5))], topics)
    weighted: list[tuple[Callable[[], Event | None], int]] = [
        (draft.tick, 30), (draft.long_tick, 5), (draft.jump, 3), (draft.join, 9), (draft.leave, 4),
        (draft.pause, 6), (draft.resume, 6), (draft.subscribe, 3), (draft.commit, 6), (draft.probe, 5),
        (draft.grow, 3), (draft.crash, 6), (draft.snapshot, 2), (draft.restart, 2),
        (draft.stall, 4 if protocol == "consumer" else 0),  # last and weightless for classic: their draws stay
    ]
    makers = [m for m, _ in weighted]
    weights = [w for _, w in weighted]
    events: list[Event] = []
    for _ in range(rng.randint(1, 3)):
        joined = draft.join()
        if joined is not None:
            events.append(joined)
    events.append(draft.tick())
    while len(events) < length:
        event = rng.choices(makers, weights)[0]()
        if event is not None:
            events.append(event)
    return Schedule(seed=seed, mode=chosen, topics=initial, events=tuple(events), static=static, protocol=protocol)
