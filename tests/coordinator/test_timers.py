"""The keyed timer queue: replaced timers do not pile up, and due timers still fire in deadline order."""

from __future__ import annotations

from groupcoord.coordinator.timers import COMPACT_SLACK, TimerOp, Timers


def test_rescheduling_keeps_the_queue_as_small_as_its_live_timers() -> None:
    """Every heartbeat replaces its member's session timer: 100 members x 200 heartbeats leave 100 live timers, and
    the heap (dead entries included) stays within twice that plus the slack."""
    timers = Timers()
    fired: list[tuple[str, int]] = []

    def expiry(key: str) -> TimerOp:
        return lambda now: fired.append((key, now))

    for beat in range(200):
        for member in range(100):
            key = f"heartbeat-g-m{member}"
            timers.schedule(key, 10_000 + beat * 10 + member, expiry(key))
    assert len(timers.keys()) == 100
    assert len(timers._heap) <= 2 * 100 + COMPACT_SLACK + 1
    while (due := timers.pop_due(10**9)) is not None:
        deadline, op = due
        op(deadline)
    # only the last schedule of each member fires, at its own deadline, in deadline order
    assert fired == [(f"heartbeat-g-m{m}", 10_000 + 199 * 10 + m) for m in range(100)]


def test_a_cancelled_timer_never_fires_and_drops_its_handler() -> None:
    timers = Timers()
    fired: list[int] = []
    timers.schedule("join-g", 5, fired.append)
    timers.schedule("join-h", 7, fired.append)
    timers.cancel("join-g")
    assert timers.next_deadline() == 7
    assert timers.pop_due(100) == (7, fired.append)
    assert timers.pop_due(100) is None
    assert fired == []
