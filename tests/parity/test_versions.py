"""Parity of each group request's answers at every version both sides serve: good requests, and the usual mistakes
(unknown group, unknown member, stale generation). Also which versions each side advertises.

Each scenario runs on Kafka 4.4.0's coordinator, then on ``groupcoord serve``; the normalised answers must be equal.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest
from kafka.protocol.metadata import ApiVersionsRequest, FindCoordinatorRequest

from tests.parity.observe import Observation, assert_parity
from tests.parity.targets import Target, group_name
from tests.parity.wire import RawMember, rebalance, versions_for

pytestmark = [pytest.mark.kafka, pytest.mark.integration]

UNKNOWN_MEMBER = "raw-test-unknown"


def member_speaking(target: Target, observation: Observation, group: str, api: str, version: int) -> RawMember:
    """A member that joins with JoinGroup v9 and sends ``api`` (a field of :class:`Versions`) at ``version``."""
    versions = dataclasses.replace(versions_for(9), **{api: version})
    return RawMember(target, observation, group, versions, "a")


def heartbeats(member: RawMember, group: str) -> None:
    """Heartbeat to an unknown group, from an unknown member, with a stale generation, then a good one."""
    member.heartbeat("unknown group", generation=1, member_id=UNKNOWN_MEMBER)
    rebalance("joined", [member])
    member.heartbeat("unknown member", member_id=UNKNOWN_MEMBER)
    member.heartbeat("stale generation", generation=member.generation - 1)
    member.heartbeat("good")


def syncs(member: RawMember, group: str) -> None:
    """SyncGroup to an unknown group, from an unknown member, with a stale generation, a good one, and one naming
    another protocol than the group's."""
    member.member_id = UNKNOWN_MEMBER
    member.sync("unknown group", generation=1)
    member.member_id = ""
    member.join("ask for a member id")
    member.join("join")
    stale = member.member_id
    member.member_id = UNKNOWN_MEMBER
    member.sync("unknown member")
    member.member_id = stale
    member.sync("stale generation", generation=member.generation - 1)
    member.sync("good", {member.member_id: b""})
    member.sync("again, once stable")
    member.protocol = "roundrobin"
    member.sync("another protocol name (sent from v5)")


def leaves(member: RawMember, group: str) -> None:
    """LeaveGroup of an unknown group, of an unknown member, then a good one."""
    member.member_id = UNKNOWN_MEMBER
    member.leave("unknown group")
    member.member_id = ""
    rebalance("joined", [member])
    joined = member.member_id
    member.member_id = UNKNOWN_MEMBER
    member.leave("unknown member")
    member.member_id = joined
    member.leave("good")
    member.describe("after leaving", group)


def describes(member: RawMember, group: str) -> None:
    """DescribeGroups of an unknown group, then of a stable one."""
    member.describe("unknown group", group, member.versions.describe)
    rebalance("joined", [member])
    member.describe("stable group", group, member.versions.describe)


SCENARIOS: dict[str, tuple[Callable[[RawMember, str], None], range]] = {
    "heartbeat": (heartbeats, range(5)),
    "sync": (syncs, range(6)),
    "leave": (leaves, range(6)),
    "describe": (describes, range(7)),
}
"""By request (a field of :class:`Versions`): the scenario and the versions both sides serve."""

def request_at_version(target: Target, group: str, api: str, version: int) -> Observation:
    """Run the scenario of ``api`` with that request sent at ``version``."""
    observation = Observation()
    member = member_speaking(target, observation, group, api, version)
    try:
        SCENARIOS[api][0](member, group)
    finally:
        member.close()
    return observation


@pytest.mark.parametrize(("api", "version"), [
    (api, version) for api, (_, versions) in SCENARIOS.items() for version in versions])
def test_request_at_version(targets: tuple[Target, Target], request: pytest.FixtureRequest, api: str,
                            version: int) -> None:
    assert_parity(targets, request_at_version, group_name(request.node.name), api, version)


def list_groups(target: Target, group: str, version: int) -> Observation:
    """ListGroups of a stable and an empty group (from v4 also filtered by state)."""
    observation = Observation()
    stable = member_speaking(target, observation, group, "join", 9)
    gone = member_speaking(target, observation, f"{group}-empty", "join", 9)
    try:
        rebalance("stable", [stable])
        rebalance("soon empty", [gone])
        gone.commit_offsets("commit", {})
        gone.leave("leave")
        stable.list_groups("listed", [group, f"{group}-empty"], version)
        if version >= 4:
            stable.list_groups("listed, only Empty", [group, f"{group}-empty"], version, states=["Empty"])
    finally:
        stable.close()
        gone.close()
    return observation


@pytest.mark.parametrize("version", range(6))
def test_list_groups(targets: tuple[Target, Target], request: pytest.FixtureRequest, version: int) -> None:
    assert_parity(targets, list_groups, group_name(request.node.name), version)


def find_coordinator(target: Target, group: str, version: int) -> Observation:
    """FindCoordinator of a group, and of a transactional id (key type 1): the errors, not the address."""
    observation = Observation()
    member = member_speaking(target, observation, group, "join", 9)
    try:
        for key_type in (0, 1):
            response = member.client.request(FindCoordinatorRequest(
                version=version, key=group, key_type=key_type, coordinator_keys=[group]))
            errors = ([c.error_code for c in response.coordinators] if version >= 4 else [response.error_code])
            observation.add(f"key type {key_type}", {"error_code": errors})
    finally:
        member.close()
    return observation


@pytest.mark.parametrize("version", range(7))
def test_find_coordinator(targets: tuple[Target, Target], request: pytest.FixtureRequest, version: int) -> None:
    assert_parity(targets, find_coordinator, group_name(request.node.name), version)


GROUP_APIS = {8: "OffsetCommit", 9: "OffsetFetch", 10: "FindCoordinator", 11: "JoinGroup", 12: "Heartbeat",
              13: "LeaveGroup", 14: "SyncGroup", 15: "DescribeGroups", 16: "ListGroups", 42: "DeleteGroups",
              47: "OffsetDelete"}
"""The classic group protocol's APIs, by key."""


def advertised_versions(target: Target) -> Observation:
    """The version range ApiVersions advertises for each group API."""
    observation = Observation()
    member = member_speaking(target, observation, "unused", "join", 9)
    try:
        response = member.client.request(ApiVersionsRequest(version=3, client_software_name="parity",
                                                            client_software_version="1"))
        for key in response.api_keys:
            if key.api_key in GROUP_APIS:
                observation.add(GROUP_APIS[key.api_key], (key.min_version, key.max_version))
    finally:
        member.close()
    return observation


def test_advertised_versions(targets: tuple[Target, Target]) -> None:
    assert_parity(targets, advertised_versions)
