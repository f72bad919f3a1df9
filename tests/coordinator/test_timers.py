"""The keyed timer queue: replaced timers leave nothing behind, and it fires exactly what, and when, a plain heap of
every scheduled entry fires (the simulator's schedules depend on that order)."""

from __future__ import annotations

import gc
import heapq
import itertools
import random
import weakref

from groupcoord.coordinator.timers import COMPACT_SLACK, TimerOp, Timers


class PlainTimers:
    """The reference: every schedule pushes an entry, a replaced or cancelled one is skipped when it comes up."""

    def __init__(self) -> None:
        self.heap: list[tuple[int, int, str]] = []
        self.by_key: dict[str, tuple[int, int, TimerOp]] = {}
        self.seq = itertools.count()

    def schedule(self, key: str, deadline_ms: int, op: TimerOp) -> None:
        seq = next(self.seq)
        self.by_key[key] = (deadline_ms, seq, op)
        heapq.heappush(self.heap, (deadline_ms, seq, key))

    def cancel(self, key: str) -> None:
        self.by_key.pop(key, None)

    def _settle(self) -> None:
        while self.heap and self.by_key.get(self.heap[0][2], (0, -1))[1] != self.heap[0][1]:
            heapq.heappop(self.heap)

    def next_deadline(self) -> int | None:
        self._settle()
        return self.heap[0][0] if self.heap else None

    def pop_due(self, now_ms: int) -> tuple[int, TimerOp] | None:
        self._settle()
        if not self.heap or self.heap[0][0] > now_ms:
            return None
        _, _, key = heapq.heappop(self.heap)
        deadline_ms, _, op = self.by_key.pop(key)
        return deadline_ms, op

    def deadline(self, key: str) -> int | None:
        entry = self.by_key.get(key)
        return None if entry is None else entry[0]

    def keys(self) -> list[str]:
        return sorted(self.by_key)

    def clear(self) -> None:
        self.heap.clear()
        self.by_key.clear()


def test_heartbeats_behind_a_live_timer_leave_no_entries() -> None:
    """Every heartbeat replaces its member's session timer. A timer due before all of them (a rebalance's overdue
    watch) sits at the top meanwhile: 100 members x 200 heartbeats still leave one entry per timer, and only the
    last schedule of each member fires, at its own deadline, in deadline order."""
    timers = Timers()
    fired: list[tuple[str, int]] = []

    def expiry(key: str) -> TimerOp:
        return lambda now: fired.append((key, now))

    timers.schedule("overdue-g", 5_000, expiry("overdue-g"))
    for beat in range(200):
        now = beat * 10
        assert timers.pop_due(now) is None  # the shell fires due timers before every request
        for member in range(100):
            key = f"heartbeat-g-m{member}"
            timers.schedule(key, now + 10_000 + member, expiry(key))
    assert len(timers.keys()) == 101
    assert len(timers._heap) == 101
    while (due := timers.pop_due(10**9)) is not None:
        deadline, op = due
        op(deadline)
    assert fired == [("overdue-g", 5_000), *((f"heartbeat-g-m{m}", 11_990 + m) for m in range(100))]


def test_cancelled_and_earlier_timers_stay_within_twice_the_live_ones() -> None:
    """Timers cancelled or moved earlier leave dead entries; the heap is rebuilt before they outnumber the live."""
    timers = Timers()
    timers.schedule("overdue-g", 1, lambda now: None)  # never popped: nothing is dropped from the top
    for round_ in range(50):
        for member in range(100):
            timers.schedule(f"m{member}", 10**6 - round_, lambda now: None)  # earlier each round
            timers.cancel(f"gone{round_}-{member}")
            timers.schedule(f"gone{round_}-{member}", 10**6, lambda now: None)
            timers.cancel(f"gone{round_}-{member}")
        assert len(timers._heap) <= 2 * len(timers.keys()) + COMPACT_SLACK + 1
    assert timers.keys() == sorted(["overdue-g", *(f"m{m}" for m in range(100))])
    assert timers.next_deadline() == 1


def test_a_replaced_or_cancelled_timer_releases_its_handler_at_once() -> None:
    class Handler:
        def __call__(self, now_ms: int) -> None:
            raise AssertionError("a replaced or cancelled timer fired")

    def block(now_ms: int) -> None:
        """A live timer due before the others."""

    timers = Timers()
    timers.schedule("block", 1, block)
    first, second = Handler(), Handler()
    released = [weakref.ref(first), weakref.ref(second)]
    timers.schedule("heartbeat-g-m", 100, first)
    timers.schedule("heartbeat-g-m", 200, second)  # moved later: keeps its entry, takes the new handler
    timers.schedule("join-g", 300, lambda now: None)
    del first, second
    gc.collect()
    assert released[0]() is None and released[1]() is not None
    timers.cancel("heartbeat-g-m")
    gc.collect()
    assert released[1]() is None
    assert timers.pop_due(1) == (1, block)
    assert timers.keys() == ["join-g"]
    assert timers.pop_due(1000) is not None and timers.pop_due(1000) is None


def handler() -> TimerOp:
    """A distinct handler (compared by identity)."""
    return lambda now_ms: None


def test_it_fires_what_a_plain_heap_of_every_entry_fires() -> None:
    """Random schedules (later, earlier, equal deadlines, new keys), cancels, clock steps and clears, against the
    reference: the same deadlines, handlers, order, keys and next deadline at every step."""
    for seed in range(60):
        rng = random.Random(seed)
        timers, plain = Timers(), PlainTimers()
        keys = [f"k{i}" for i in range(rng.choice((3, 12, 40)))]
        now = 0
        for step in range(1500):
            roll = rng.random()
            if roll < 0.6:
                key, deadline = rng.choice(keys), now + rng.randrange(0, 400)
                op = handler()
                timers.schedule(key, deadline, op)
                plain.schedule(key, deadline, op)
            elif roll < 0.7:
                key = rng.choice(keys)
                timers.cancel(key)
                plain.cancel(key)
            elif roll < 0.998:
                now += rng.randrange(0, 60)
                while True:
                    got, want = timers.pop_due(now), plain.pop_due(now)
                    assert got == want, (seed, step)
                    if got is None:
                        break
            else:
                timers.clear()
                plain.clear()
            assert timers.next_deadline() == plain.next_deadline(), (seed, step)
            assert timers.keys() == plain.keys()
            assert [timers.deadline(k) for k in keys] == [plain.deadline(k) for k in keys]
