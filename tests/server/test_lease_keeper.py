"""The lease keeper renews from its own thread: a busy event loop cannot starve renewal, and it fences in time.

Real Delta lease tables on disk with a short lease (1.5 s, 0.5 s safety margin) so the windows are seconds long.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

from groupcoord.host.coordinator_host import LeaseKeeper
from groupcoord.log.config import LeaseConfig
from groupcoord.log.lease import HeldLease, LeaseTable, utc_now
from groupcoord.state_root import StateRoot

CONFIG = LeaseConfig(renew_interval_ms=200, timeout_ms=1500, safety_ms=500)


def acquired(tmp_path: Path) -> tuple[LeaseTable, HeldLease]:
    """A lease table in a fresh state root, and the lease taken in it."""
    table = LeaseTable(StateRoot.open(tmp_path / "root", create=True).lease_path, config=CONFIG)
    lease = table.try_acquire("holder", "127.0.0.1:9092")
    assert lease is not None
    return table, lease


class Fences:
    """Collects the reasons ``on_lost`` was called with (from the keeper's thread)."""

    def __init__(self) -> None:
        self.reasons: list[str] = []
        self.called = threading.Event()

    def __call__(self, reason: str) -> None:
        self.reasons.append(reason)
        self.called.set()


def test_a_loop_busy_for_longer_than_the_lease_does_not_stop_renewal(tmp_path: Path) -> None:
    table, lease = acquired(tmp_path)
    fences = Fences()
    keeper = LeaseKeeper(table, lease, renew_interval_s=0.2, check_s=0.05, on_lost=fences)
    keeper.start()

    async def busy_loop(seconds: float) -> None:
        # Python work on the loop with no await, as a join storm of thousands of requests is.
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            sum(range(1000))

    asyncio.run(busy_loop(2.5))  # longer than the whole lease (1.5 s)
    newest = keeper.stop()
    assert fences.reasons == []
    assert newest.epoch == lease.epoch and newest.info.expiry > lease.info.expiry
    assert newest.may_serve(utc_now())
    table.release(newest)  # the release commits on top of the newest renewal
    current = table.read_current()
    assert current is not None and current.released


def test_the_keeper_fences_once_the_safe_window_closes_without_a_renewal(tmp_path: Path) -> None:
    table, lease = acquired(tmp_path)
    fences = Fences()
    keeper = LeaseKeeper(table, lease, renew_interval_s=60.0, check_s=0.05, on_lost=fences)
    keeper.start()
    assert fences.called.wait(5.0)
    fenced_at = utc_now()
    keeper.stop()
    assert fences.reasons == [f"lease epoch {lease.epoch} not renewed in time: no longer serving"]
    assert fenced_at >= lease.serve_until
    assert (fenced_at - lease.serve_until).total_seconds() < 1.0
