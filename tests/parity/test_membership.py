"""Parity of group membership at each JoinGroup version: joining, rebalancing, leaving, session expiry.

Each scenario runs on Kafka 4.4.0's coordinator, then on ``groupcoord serve``, through raw requests at exact versions;
the normalised answers must be equal (see ``observe.py``). Differences are listed in docs/compatibility.md.
"""

from __future__ import annotations

import time

import pytest

from tests.parity.observe import Observation, assert_parity
from tests.parity.targets import OTHER_TOPIC, TOPIC, Target, group_name
from tests.parity.wire import (
    JOIN_VERSIONS,
    OLD_JOIN_VERSIONS,
    RawMember,
    add_member,
    commit_partition,
    rebalance,
    sync_all,
    versions_for,
)

pytestmark = [pytest.mark.kafka, pytest.mark.integration]

MIN_SESSION_TIMEOUT_MS = 6000
"""``group.min.session.timeout.ms``: Kafka's default, and groupcoord's."""


def join_rebalance_and_leave(target: Target, group: str, version: int) -> Observation:
    """One member joins; a second joins (a rebalance); the second leaves (another); the first commits and leaves."""
    observation = Observation()
    versions = versions_for(version)
    a = RawMember(target, observation, group, versions, "a")
    b = RawMember(target, observation, group, versions, "b")
    try:
        rebalance("alone", [a])
        a.heartbeat("a heartbeats")
        a.describe("stable with one member", group, versions.describe)
        b.join("b asks for a member id")
        b_joins = b.start_join()
        a.wait_for_state(group, "PreparingRebalance")
        a.heartbeat("a heartbeats while b waits")
        a.join("a rejoins")
        b.finish_join("b joins", b_joins)
        b.heartbeat("b heartbeats before syncing")
        sync_all("with b", [a, b])
        a.describe("stable with two members", group, versions.describe)
        b.heartbeat("b heartbeats")
        b.leave("b leaves")
        a.heartbeat("a heartbeats after b left")
        rebalance("alone again", [a])
        a.commit_offsets("a commits", {TOPIC: [commit_partition(0, 5, "meta")]})
        a.fetch("a fetches", group, versions.fetch, {TOPIC: [0, 1]})
        a.leave("a leaves")
        a.describe("empty", group, versions.describe)
        a.describe("the empty group id", "", versions.describe)
        a.heartbeat("a heartbeats after leaving")
    finally:
        a.close()
        b.close()
    return observation


@pytest.mark.parametrize("version", JOIN_VERSIONS)
def test_join_rebalance_and_leave(targets: tuple[Target, Target], request: pytest.FixtureRequest,
                                  version: int) -> None:
    assert_parity(targets, join_rebalance_and_leave, group_name(request.node.name), version)


def old_version_member(target: Target, group: str, version: int) -> Observation:
    """A client of JoinGroup v0-v3 (before KIP-394): it joins at once, syncs, heartbeats, commits and leaves."""
    observation = Observation()
    versions = versions_for(version)
    a = RawMember(target, observation, group, versions, "a")
    try:
        a.join_group("a joins")
        sync_all("a alone", [a])
        a.heartbeat("a heartbeats")
        a.describe("stable", group, versions.describe)
        a.commit_offsets("a commits", {TOPIC: [commit_partition(0, 3, "old")]})
        a.fetch("a fetches", group, versions.fetch, {TOPIC: [0]})
        a.leave("a leaves")
        a.describe("empty", group, versions.describe)
    finally:
        a.close()
    return observation


@pytest.mark.parametrize("version", OLD_JOIN_VERSIONS)
def test_old_version_member(targets: tuple[Target, Target], request: pytest.FixtureRequest, version: int) -> None:
    assert_parity(targets, old_version_member, group_name(request.node.name), version)


def describe_during_a_rebalance(target: Target, group: str, version: int) -> Observation:
    """DescribeGroups while a second member's join holds the group in PreparingRebalance."""
    observation = Observation()
    versions = versions_for(version)
    a = RawMember(target, observation, group, versions, "a")
    b = RawMember(target, observation, group, versions, "b")
    try:
        rebalance("alone", [a])
        b.join("b asks for a member id")
        b_joins = b.start_join()
        a.wait_for_state(group, "PreparingRebalance")
        a.describe("preparing a rebalance", group, versions.describe)
        a.join("a rejoins")
        b.finish_join("b joins", b_joins)
    finally:
        a.close()
        b.close()
    return observation


@pytest.mark.parametrize("version", JOIN_VERSIONS)
def test_describe_during_a_rebalance(targets: tuple[Target, Target], request: pytest.FixtureRequest,
                                     version: int) -> None:
    assert_parity(targets, describe_during_a_rebalance, group_name(request.node.name), version)


def rejoins(target: Target, group: str, version: int) -> Observation:
    """Which rejoins of a stable group start a rebalance: a follower's unchanged, the leader's unchanged, and a
    follower's with a new subscription."""
    observation = Observation()
    versions = versions_for(version)
    leader = RawMember(target, observation, group, versions, "leader")
    follower = RawMember(target, observation, group, versions, "follower")
    try:
        rebalance("leader alone", [leader])
        add_member("with follower", [leader], follower)
        follower.join("follower rejoins unchanged")
        leader.heartbeat("leader heartbeats after the follower's rejoin")
        follower.sync("follower syncs after its rejoin")
        leader_joins = leader.start_join()
        follower.wait_for_state(group, "PreparingRebalance")
        follower.heartbeat("follower heartbeats after the leader's rejoin")
        follower.join("follower rejoins")
        leader.finish_join("leader rejoins unchanged", leader_joins)
        sync_all("after the leader's rejoin", [leader, follower])
        follower.topics = (TOPIC, OTHER_TOPIC)
        follower_joins = follower.start_join()
        leader.wait_for_state(group, "PreparingRebalance")
        leader.heartbeat("leader heartbeats after the follower's new subscription")
        leader.join("leader rejoins")
        follower.finish_join("follower rejoins with a new subscription", follower_joins)
        sync_all("after the new subscription", [leader, follower])
    finally:
        leader.close()
        follower.close()
    return observation


@pytest.mark.parametrize("version", JOIN_VERSIONS)
def test_rejoins(targets: tuple[Target, Target], request: pytest.FixtureRequest, version: int) -> None:
    assert_parity(targets, rejoins, group_name(request.node.name), version)


def join_errors(target: Target, group: str, version: int) -> Observation:
    """JoinGroup answers to bad joins: a session timeout out of range, an unknown member id, another protocol type,
    no protocols, an empty group id."""
    observation = Observation()
    a = RawMember(target, observation, group, versions_for(version), "a", session_timeout_ms=1000)
    b = RawMember(target, observation, group, versions_for(version), "b")
    try:
        a.join("session timeout below the minimum")
        a.session_timeout_ms = 1_800_001
        a.join("session timeout above the maximum")
        b.join("unknown member id, group unknown", member_id="raw-test-unknown")
        rebalance("b alone", [b])
        b.join("unknown member id, group known", member_id="raw-test-unknown")
        a.session_timeout_ms = MIN_SESSION_TIMEOUT_MS
        a.join("another protocol type", protocol_type="connect")
        a.topics = ()
        a.protocol = "roundrobin"
        a.join("no protocol in common")
        a.group = ""
        a.join("empty group id")
    finally:
        a.close()
        b.close()
    return observation


@pytest.mark.parametrize("version", JOIN_VERSIONS)
def test_join_errors(targets: tuple[Target, Target], request: pytest.FixtureRequest, version: int) -> None:
    assert_parity(targets, join_errors, group_name(request.node.name), version)


def session_expiry(target: Target, group: str, version: int) -> Observation:
    """A member stops heartbeating: once its session times out the other member is told to rejoin, alone."""
    observation = Observation()
    versions = versions_for(version)
    quiet = RawMember(target, observation, group, versions, "quiet", session_timeout_ms=MIN_SESSION_TIMEOUT_MS)
    alive = RawMember(target, observation, group, versions, "alive")
    try:
        rebalance("alive", [alive])
        add_member("both", [alive], quiet)
        deadline = time.monotonic() + 3 * MIN_SESSION_TIMEOUT_MS / 1000
        while alive.client.request(alive.heartbeat_request()).error_code == 0:
            assert time.monotonic() < deadline, f"{target.name} never expired the quiet member"
            time.sleep(0.5)
        alive.heartbeat("alive heartbeats once quiet expired")
        rebalance("alive alone", [alive])
        alive.describe("quiet expired", group, versions.describe)
        quiet.heartbeat("quiet heartbeats after expiry")
        quiet.join("quiet rejoins with its old member id")
    finally:
        quiet.close()
        alive.close()
    return observation


@pytest.mark.slow
def test_session_expiry(targets: tuple[Target, Target], request: pytest.FixtureRequest) -> None:
    assert_parity(targets, session_expiry, group_name(request.node.name), 9)
