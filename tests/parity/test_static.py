"""Parity of static membership (KIP-345) at each JoinGroup version that carries ``group.instance.id`` (v5-v9).

Static members rejoin after a restart under the same instance id; Kafka hands a follower its old assignment without a
rebalance, fences the old member id, and treats a rejoining leader specially. Each scenario runs on Kafka 4.4.0's
coordinator, then on ``groupcoord serve``; the normalised answers must be equal.
"""

from __future__ import annotations

import pytest

from tests.parity.observe import Observation, assert_parity
from tests.parity.targets import TOPIC, Target, group_name
from tests.parity.wire import STATIC_JOIN_VERSIONS, RawMember, add_member, commit_partition, rebalance, versions_for

pytestmark = [pytest.mark.kafka, pytest.mark.integration]


def static_pair(target: Target, observation: Observation, group: str, version: int) -> tuple[RawMember, RawMember]:
    """Two static members, ``leader`` (instance ``i-leader``) and ``follower`` (``i-follower``), in one generation."""
    versions = versions_for(version)
    leader = RawMember(target, observation, group, versions, "leader", instance_id="i-leader")
    follower = RawMember(target, observation, group, versions, "follower", instance_id="i-follower")
    rebalance("first", [leader])
    add_member("second", [leader], follower)
    return leader, follower


def restarted(member: RawMember, name: str) -> RawMember:
    """The same static member after a restart: same instance id, no member id, a new connection."""
    return RawMember(member.target, member.observation, member.group, member.versions, name,
                     instance_id=member.instance_id)


def follower_restarts(target: Target, group: str, version: int) -> Observation:
    """A static follower restarts (rejoins with its instance id and no member id); its old member id is fenced."""
    observation = Observation()
    leader, follower = static_pair(target, observation, group, version)
    again = restarted(follower, "follower again")
    try:
        again.join("follower rejoins after a restart")
        again.sync("follower syncs after the restart")
        leader.heartbeat("leader heartbeats: no rebalance")
        follower.heartbeat("old follower heartbeats")
        follower.commit_offsets("old follower commits", {TOPIC: [commit_partition(1, 7)]})
        follower.sync("old follower syncs")
        again.commit_offsets("follower commits", {TOPIC: [commit_partition(1, 7)]})
        leader.describe("after the restart", group, leader.versions.describe)
    finally:
        for member in (leader, follower, again):
            member.close()
    return observation


@pytest.mark.parametrize("version", STATIC_JOIN_VERSIONS)
def test_follower_restarts(targets: tuple[Target, Target], request: pytest.FixtureRequest, version: int) -> None:
    assert_parity(targets, follower_restarts, group_name(request.node.name), version)


def leader_restarts(target: Target, group: str, version: int) -> Observation:
    """The static leader restarts: what its JoinGroup answers, and whether the follower is asked to rejoin."""
    observation = Observation()
    leader, follower = static_pair(target, observation, group, version)
    again = restarted(leader, "leader again")
    try:
        again.join("leader rejoins after a restart")
        follower.heartbeat("follower heartbeats after the leader's restart")
        leader.heartbeat("old leader heartbeats")
        again.describe("after the leader's restart", group, again.versions.describe)
    finally:
        for member in (leader, follower, again):
            member.close()
    return observation


@pytest.mark.parametrize("version", STATIC_JOIN_VERSIONS)
def test_leader_restarts(targets: tuple[Target, Target], request: pytest.FixtureRequest, version: int) -> None:
    assert_parity(targets, leader_restarts, group_name(request.node.name), version)


def fencing_and_leaving(target: Target, group: str, version: int) -> Observation:
    """Requests naming a static instance with another member id are fenced; a static member leaves by instance id."""
    observation = Observation()
    leader, follower = static_pair(target, observation, group, version)
    try:
        follower.join("join with the instance id and a wrong member id", member_id="raw-test-impostor")
        follower.heartbeat("heartbeat with a wrong member id", member_id="raw-test-impostor")
        follower.commit_offsets("commit with a wrong member id", {TOPIC: [commit_partition(0, 1)]},
                                member_id="raw-test-impostor")
        follower.heartbeat("heartbeat with a stale generation", generation=follower.generation - 1)
        follower.leave("follower leaves")
        leader.heartbeat("leader heartbeats after the follower left")
        rebalance("leader alone", [leader])
        leader.describe("after the follower left", group, leader.versions.describe)
    finally:
        leader.close()
        follower.close()
    return observation


@pytest.mark.parametrize("version", STATIC_JOIN_VERSIONS)
def test_fencing_and_leaving(targets: tuple[Target, Target], request: pytest.FixtureRequest, version: int) -> None:
    assert_parity(targets, fencing_and_leaving, group_name(request.node.name), version)
