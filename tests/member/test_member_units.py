"""Pure pieces of the member client: argument validation, heartbeat timekeeping, backoff, protocol choice."""

from __future__ import annotations

import random

import pytest

from groupcoord.member import GroupMember
from groupcoord.member.backoff import Backoff
from groupcoord.member.generation import NO_GENERATION, Generation
from groupcoord.member.heartbeat import HeartbeatTimer, HeartbeatTiming


class ManualClock:
    """Milliseconds that move only when told."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("arguments", [
    {"bootstrap_servers": "h:1"},
    {"topics": ["t"], "pattern": "t.*", "bootstrap_servers": "h:1"},
    {"topics": ["t"]},
    {"topics": ["t"], "bootstrap_servers": "h:1", "state_root": "/tmp/x"},
], ids=["no-topics-or-pattern", "topics-and-pattern", "no-coordinator-source", "both-coordinator-sources"])
def test_member_needs_exactly_one_of_topics_or_pattern_and_one_of_bootstrap_or_state_root(
    arguments: dict[str, object],
) -> None:
    with pytest.raises(ValueError, match="exactly one of") as raised:
        GroupMember("g", **arguments)  # type: ignore[arg-type]
    assert "\n" not in str(raised.value)


def test_bad_values_are_refused_with_one_message() -> None:
    with pytest.raises(ValueError, match="not HOST:PORT"):
        GroupMember("g", topics=["t"], bootstrap_servers="nohost")
    with pytest.raises(ValueError, match="lower than session_timeout_ms"):
        GroupMember("g", topics=["t"], bootstrap_servers="h:1", session_timeout_ms=1000, heartbeat_interval_ms=1000)
    with pytest.raises(ValueError, match="not a string"):
        GroupMember("g", topics="t", bootstrap_servers="h:1")


@pytest.mark.parametrize(("assignors", "cooperative"), [
    (("server-cooperative-sticky",), True),
    (("cooperative-sticky", "server-cooperative-sticky"), True),
    (("server-cooperative-sticky", "range"), False),
    (("server-sticky",), False),
])
def test_the_protocol_is_cooperative_only_when_every_assignor_is(assignors: tuple[str, ...],
                                                                 cooperative: bool) -> None:
    member = GroupMember("g", topics=["t"], bootstrap_servers="127.0.0.1:9", assignors=assignors)
    assert member.cooperative is cooperative


def test_heartbeat_timer_paces_heartbeats_and_backs_off_after_a_failure() -> None:
    clock = ManualClock()
    timer = HeartbeatTimer(HeartbeatTiming(session_timeout_ms=1000, heartbeat_interval_ms=300,
                                           rebalance_timeout_ms=5000, retry_backoff_ms=50), clock=clock)
    assert timer.time_to_next_heartbeat_ms() == 300
    clock.now += 300
    assert timer.should_heartbeat()
    timer.sent_heartbeat()
    assert timer.time_to_next_heartbeat_ms() == 300
    timer.fail_heartbeat()
    assert timer.time_to_next_heartbeat_ms() == 50
    clock.now += 50
    assert timer.should_heartbeat()


def test_heartbeat_timer_detects_session_and_poll_timeouts_and_resets() -> None:
    clock = ManualClock()
    timer = HeartbeatTimer(HeartbeatTiming(session_timeout_ms=1000, heartbeat_interval_ms=300,
                                           rebalance_timeout_ms=2000), clock=clock)
    clock.now += 900
    timer.received_heartbeat()
    clock.now += 1000
    assert not timer.session_timeout_expired()
    clock.now += 1
    assert timer.session_timeout_expired()
    assert not timer.poll_timeout_expired()  # 1901 ms since the start: within the 2000 ms rebalance timeout
    clock.now += 100
    assert timer.poll_timeout_expired()
    timer.reset_timeouts()
    assert not timer.session_timeout_expired() and not timer.poll_timeout_expired()
    clock.now += 1500
    timer.poll()
    clock.now += 1500
    assert not timer.poll_timeout_expired()


def test_backoff_doubles_with_jitter_up_to_its_maximum_and_resets() -> None:
    backoff = Backoff(100, 1000, rng=random.Random(7))
    delays = [backoff.next_ms() for _ in range(6)]
    for delay, base in zip(delays, [100, 200, 400, 800, 1000, 1000], strict=True):
        assert 0.8 * base <= delay <= 1.2 * base
    backoff.reset()
    assert backoff.next_ms() <= 120


def test_a_lost_generation_keeps_the_member_id_and_no_generation_has_none() -> None:
    generation = Generation(4, "m-1", "server-sticky")
    assert generation.lost() == Generation(-1, "m-1", None)
    assert not generation.lost().is_valid and generation.is_valid
    assert NO_GENERATION.member_id == "" and not NO_GENERATION.is_valid
