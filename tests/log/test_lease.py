"""The election lease: compare-and-set takes, renewals and releases, with the safety margin on both sides."""

from __future__ import annotations

import datetime as dt
import multiprocessing
from pathlib import Path

import pytest

from groupcoord.log.config import LeaseConfig
from groupcoord.log.lease import HeldLease, LeaseLostError, LeaseTable, current_holder
from groupcoord.state_root import StateRoot

T0 = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
CONFIG = LeaseConfig(renew_interval_ms=2000, timeout_ms=10_000, safety_ms=2000)


def at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


@pytest.fixture
def lease(tmp_path: Path) -> LeaseTable:
    return LeaseTable(StateRoot.open(tmp_path / "root", create=True).lease_path, config=CONFIG)


def test_first_taker_gets_epoch_1_and_is_published_with_its_address(lease: LeaseTable, tmp_path: Path) -> None:
    held = lease.try_acquire("a", "127.0.0.1:9092", at(0))
    assert held is not None and held.epoch == 1
    found = current_holder(tmp_path / "root", now=at(1))
    assert found is not None
    assert (found.holder, found.address, found.epoch, found.live) == ("a", "127.0.0.1:9092", 1, True)
    assert found.expiry == at(10)


def test_a_live_lease_is_not_taken(lease: LeaseTable) -> None:
    assert lease.try_acquire("a", "h:1", at(0)) is not None
    assert lease.try_acquire("b", "h:2", at(5)) is None
    current = lease.read_current(at(5))
    assert current is not None and current.holder == "a"


def test_an_expired_lease_is_taken_only_after_expiry_plus_the_margin(lease: LeaseTable) -> None:
    assert lease.try_acquire("a", "h:1", at(0)) is not None
    expired = lease.read_current(at(10.5))
    assert expired is not None and not expired.live
    assert lease.try_acquire("b", "h:2", at(11.999)) is None
    taken = lease.try_acquire("b", "h:2", at(12))
    assert taken is not None and taken.epoch == 2


def test_holder_stops_serving_safety_margin_before_expiry_unless_it_renews(lease: LeaseTable) -> None:
    held = lease.try_acquire("a", "h:1", at(0))
    assert held is not None
    assert held.may_serve(at(7.999)) and not held.may_serve(at(8))
    renewed = lease.renew(held, at(2))
    assert renewed.epoch == 1 and renewed.info.expiry == at(12)
    assert renewed.may_serve(at(9.5)) and not renewed.may_serve(at(10))
    assert lease.try_acquire("b", "h:2", at(13)) is None


def test_release_lets_another_take_over_at_once(lease: LeaseTable) -> None:
    held = lease.try_acquire("a", "h:1", at(0))
    assert held is not None
    released = lease.release(held, at(1))
    assert released.released and not released.live
    taken = lease.try_acquire("b", "h:2", at(1.5))
    assert taken is not None and taken.epoch == 2


def test_a_deposed_holder_cannot_renew_or_release(lease: LeaseTable) -> None:
    old = lease.try_acquire("a", "h:1", at(0))
    assert old is not None
    new = lease.try_acquire("b", "h:2", at(20))
    assert new is not None
    with pytest.raises(LeaseLostError):
        lease.renew(old, at(21))
    with pytest.raises(LeaseLostError):
        lease.release(old, at(21))
    current = lease.read_current(at(21))
    assert current is not None and (current.holder, current.epoch) == ("b", 2)


def test_maintenance_keeps_the_lease_renewable(lease: LeaseTable) -> None:
    held = lease.try_acquire("a", "h:1", at(0))
    assert held is not None
    for step in range(1, 15):
        held = lease.renew(held, at(step))
    held = lease.maintain(held)
    held = lease.renew(held, at(16))
    assert held.info.expiry == at(26)


def test_no_lease_table_means_no_holder(tmp_path: Path) -> None:
    assert current_holder(StateRoot.open(tmp_path / "root", create=True)) is None


def test_lease_config_refuses_a_renew_interval_that_leaves_no_safe_window() -> None:
    with pytest.raises(ValueError, match=r"lease\.timeout\.ms"):
        LeaseConfig(renew_interval_ms=5000, timeout_ms=6000, safety_ms=2000)


def _race(path: str, name: str, start: multiprocessing.synchronize.Barrier,
          results: multiprocessing.queues.Queue[tuple[str, int | None]]) -> None:
    start.wait()
    held = LeaseTable(path, config=CONFIG).try_acquire(name, f"127.0.0.1:{9000 + int(name[1:])}")
    results.put((name, None if held is None else held.epoch))


def _race_all(path: str, names: list[str]) -> dict[str, int | None]:
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(len(names))
    results: multiprocessing.queues.Queue[tuple[str, int | None]] = ctx.Queue()
    procs = [ctx.Process(target=_race, args=(path, name, start, results)) for name in names]
    for proc in procs:
        proc.start()
    outcome = dict(results.get(timeout=60) for _ in procs)
    for proc in procs:
        proc.join(timeout=30)
    return outcome


@pytest.mark.integration
def test_processes_racing_for_the_lease_leave_exactly_one_holder_and_release_hands_over(tmp_path: Path) -> None:
    path = str(tmp_path / "lease")
    first = _race_all(path, ["p1", "p2"])
    winners = [name for name, epoch in first.items() if epoch is not None]
    assert len(winners) == 1 and first[winners[0]] == 1, first
    table = LeaseTable(path, config=CONFIG)
    current = table.read_current()
    assert current is not None and current.holder == winners[0] and current.live
    # The holder is another (finished) process: rebuild its handle from the row and release it.
    table.release(HeldLease(current, table.safety))
    second = _race_all(path, ["p3", "p4"])
    assert sorted(second.values(), key=lambda e: e or 0) == [None, 2], second
