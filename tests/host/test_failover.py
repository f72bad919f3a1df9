"""Election and failover between real ``serve`` processes sharing one state root."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from tests.host.conftest import ServeProcess, commit, fetch
from tests.server.conftest import RawClient

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.faults]

LEASE_TIMEOUT_S, SAFETY_S = 3.0, 1.0


def test_two_serves_race_one_serves_and_the_standby_takes_over_after_a_kill(
    serve: Callable[..., ServeProcess],
) -> None:
    first, second = serve(), serve()
    winners = [p for p in (first, second) if p.is_ready_within(15)]
    assert len(winners) == 1, "exactly one process may serve"
    holder = winners[0]
    standby = second if holder is first else first
    assert "standing by" in standby.stderr()
    assert not standby.is_ready_within(2), "the standby must not serve while the lease is live"

    killed_at = time.monotonic()
    holder.kill()
    address = standby.wait_ready(timeout=LEASE_TIMEOUT_S + SAFETY_S + 10)
    took = time.monotonic() - killed_at
    # It may take over only after expiry plus the margin, and must not wait much longer than that.
    assert took <= LEASE_TIMEOUT_S + SAFETY_S + 3, f"takeover took {took:.1f} s"
    client = RawClient(address)
    try:
        assert commit(client, "g", "t", {0: 7})
    finally:
        client.close()
    assert fetch(address, "g", "t", [0]) == {0: 7}


def test_a_released_lease_is_taken_over_at_once(serve: Callable[..., ServeProcess]) -> None:
    first = serve()
    first.wait_ready()
    second = serve()
    assert not second.is_ready_within(1.5)
    stopped_at = time.monotonic()
    assert first.terminate() == 0
    second.wait_ready(timeout=10)
    assert time.monotonic() - stopped_at < LEASE_TIMEOUT_S, "a released lease needs no expiry wait"
