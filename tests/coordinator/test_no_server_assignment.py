"""A coordinator without server-side assignment (``serve --no-spark``): ``server-*`` protocols are not eligible.

A JoinGroup offering only ``server-*`` protocols is refused with INCONSISTENT_GROUP_PROTOCOL and changes nothing;
one that also offers client-side protocols joins, and the group selects among the client-side ones.
"""

from __future__ import annotations

import dataclasses
import logging

import pytest

from groupcoord.coordinator import NeedsAssignment
from groupcoord.group import GroupState
from groupcoord.log.base import RecordLog
from groupcoord.protocol import Errors, JoinGroupResponse

from .context import TEST_CONFIG, CoordinatorTestContext, protocols, round_robin

NO_SERVER_CONFIG = dataclasses.replace(TEST_CONFIG, server_side_assignment=False)


@pytest.fixture
def no_spark(record_log: RecordLog) -> CoordinatorTestContext:
    """A coordinator whose shell runs no server-side assignor, persisting to ``record_log``."""
    return CoordinatorTestContext(record_log, NO_SERVER_CONFIG)


def _selected(ctx: CoordinatorTestContext, group_id: str, *member_protocols: tuple[str, ...]) -> str | None:
    """New members join with these protocol lists; returns the protocol the completed join selected."""
    tokens = [ctx.join_new(group_id, protos=protocols(*names))[1] for names in member_protocols]
    ctx.sleep_until_answered(tokens)
    responses: list[JoinGroupResponse] = ctx.assert_all_joined(tokens)
    assert len({r.protocol_name for r in responses}) == 1
    return responses[0].protocol_name


def test_only_server_protocols_are_refused_without_state_change(
        no_spark: CoordinatorTestContext, caplog: pytest.LogCaptureFixture) -> None:
    """No member id, no group, no record, no effect; the refusal is logged with the reason."""
    version = no_spark.log.version()
    with caplog.at_level(logging.WARNING, logger="groupcoord.coordinator.join"):
        token = no_spark.join("s", protos=protocols("server-range", "server-sticky"))
    response = no_spark.response(token)
    assert isinstance(response, JoinGroupResponse)
    assert response.error == Errors.INCONSISTENT_GROUP_PROTOCOL and response.member_id == ""
    assert no_spark.coordinator.group("s") is None
    assert all(r.records == () and r.effects == () for r in no_spark.results)
    assert no_spark.log.version() == version
    assert any("need server-side assignment" in r.getMessage() and "group s" in r.getMessage()
               for r in caplog.records)
    no_spark.sleep(60_000)  # nothing was scheduled either: still no group and nothing written
    assert no_spark.coordinator.group("s") is None and no_spark.log.version() == version


def test_known_member_rejoining_with_only_server_protocols_leaves_the_group_as_it_was(
        no_spark: CoordinatorTestContext) -> None:
    """A Stable (client-assigned) group is not pushed into a rebalance by a member switching to server-*."""
    members, generation = no_spark.stable_group("g", 2)
    before = no_spark.coordinator.hard_state()
    token = no_spark.join("g", members[1], protos=protocols("server-range"))
    assert no_spark.response(token).error == Errors.INCONSISTENT_GROUP_PROTOCOL
    group = no_spark.coordinator.group("g")
    assert group is not None and group.state == GroupState.STABLE and group.generation_id == generation
    assert group.get(members[1]).protocol_names == ["range"]
    assert no_spark.coordinator.hard_state() == before
    assert no_spark.heartbeat("g", generation, members[1]).error == Errors.NONE


def test_static_member_with_only_server_protocols_does_not_fence_its_predecessor(
        no_spark: CoordinatorTestContext) -> None:
    """The refusal comes before KIP-345's replacement, so the running instance keeps its member id."""
    first = no_spark.join("g", instance_id="i-0")
    no_spark.sleep_until_answered([first])
    (joined,) = no_spark.assert_all_joined([first])
    no_spark.sync("g", joined.generation_id, joined.member_id, {joined.member_id: b"a0"})
    before = no_spark.coordinator.hard_state()
    token = no_spark.join("g", instance_id="i-0", protos=protocols("server-range"))
    assert no_spark.response(token).error == Errors.INCONSISTENT_GROUP_PROTOCOL
    assert no_spark.heartbeat("g", joined.generation_id, joined.member_id, "i-0").error == Errors.NONE
    assert no_spark.coordinator.hard_state() == before


def test_mixed_protocols_select_a_client_side_one_and_the_leader_assigns(no_spark: CoordinatorTestContext) -> None:
    """Members preferring server-range over range get range: no NeedsAssignment, the leader receives the members'
    range metadata and its SyncGroup assignment is delivered."""
    tokens = [no_spark.join_new("m", protos=protocols("server-range", "range"))[1] for _ in range(2)]
    no_spark.sleep_until_answered(tokens)
    responses = no_spark.assert_all_joined(tokens)
    assert {r.protocol_name for r in responses} == {"range"}
    assert no_spark.effects == []
    leader = next(r for r in responses if r.members)
    assert not leader.skip_assignment and len(leader.members) == 2
    group = no_spark.coordinator.group("m")
    assert group is not None and all(m.protocol_names == ["range"] for m in group.members.values())
    member_ids = [r.member_id for r in responses]
    assignment = round_robin(member_ids, {"t": 4})
    syncs = [no_spark.sync("m", leader.generation_id, m, assignment if m == leader.member_id else None)
             for m in member_ids]
    assert [no_spark.sync_response(t).assignment for t in syncs] == [assignment[m] for m in member_ids]


def test_the_same_members_select_the_server_protocol_when_it_is_available(ctx: CoordinatorTestContext) -> None:
    """The contrast with the test above: with server-side assignment on, the vote picks server-range."""
    assert _selected(ctx, "m", ("server-range", "range"), ("server-range", "range")) == "server-range"
    assert len(ctx.effects) == 1 and isinstance(ctx.effects[0], NeedsAssignment)


def test_server_protocols_do_not_count_towards_common_protocols(no_spark: CoordinatorTestContext) -> None:
    """A member offering server-range and roundrobin cannot join a range group through server-range, and a group
    whose members only share a server protocol besides their own picks among client-side ones."""
    members, _ = no_spark.stable_group("g", 1)
    token = no_spark.join("g", protos=protocols("server-range", "roundrobin"))
    assert no_spark.response(token).error == Errors.INCONSISTENT_GROUP_PROTOCOL
    assert list(no_spark.group("g").members) == members
    assert _selected(no_spark, "h", ("server-range", "roundrobin", "range"), ("range", "server-range")) == "range"
