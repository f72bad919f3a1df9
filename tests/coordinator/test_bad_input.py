"""Bad input for every API: the right error code, and state exactly as before (hard state, groups, timers)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from groupcoord.protocol import (
    ConsumerGroupDescribeResponse,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ErrorCode,
    Errors,
    GroupRequest,
    GroupResponse,
    HeartbeatRequest,
    JoinGroupProtocol,
    JoinGroupRequest,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListGroupsRequest,
    MemberIdentity,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitTopic,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchTopic,
    SyncGroupAssignment,
    SyncGroupRequest,
)
from groupcoord.protocol.responses import AlterAclsResponse, AlterCredentialsResponse

from .context import SESSION_MS, CoordinatorTestContext, protocols


def _state(ctx: CoordinatorTestContext) -> Any:
    coordinator = ctx.coordinator
    live = []
    for group_id in coordinator.group_ids():
        group = coordinator.group(group_id)
        assert group is not None
        live.append((group_id, group.state, group.generation_id, group.leader_id, tuple(group.members),
                     tuple(group.pending_members), tuple((m.protocols, m.assignment) for m in group.members.values())))
    return coordinator.hard_state(), live, coordinator.timer_keys(), len(ctx.log.load().records)


def _error(response: GroupResponse) -> ErrorCode:
    """The one error a response carries: per group, per partition, per member, or top-level."""
    if isinstance(response, DescribeGroupsResponse | ConsumerGroupDescribeResponse):
        return response.groups[0].error
    if isinstance(response, DeleteGroupsResponse | AlterCredentialsResponse):
        return response.results[0].error
    if isinstance(response, AlterAclsResponse):
        return (response.created or response.deleted)[0].error
    if isinstance(response, OffsetCommitResponse) or (
            isinstance(response, OffsetFetchResponse | OffsetDeleteResponse) and not response.error.is_error):
        (error,) = {p.error for t in response.topics for p in t.partitions}
        return error
    if isinstance(response, LeaveGroupResponse) and not response.error.is_error:
        return response.members[0].error
    return response.error


@pytest.fixture
def stable(ctx: CoordinatorTestContext) -> tuple[CoordinatorTestContext, list[str], int]:
    """A Stable group "g" of two members, with one committed offset."""
    members, generation = ctx.stable_group("g", 2)
    assert ctx.commit("g", {("t", 0): 3}, generation=generation, member_id=members[0]).topics
    return ctx, members, generation


Build = Callable[[list[str], int], GroupRequest]


def _join(**overrides: Any) -> Build:
    def build(members: list[str], generation: int) -> GroupRequest:
        fields: dict[str, Any] = {"group_id": "g", "session_timeout_ms": SESSION_MS, "member_id": members[0],
                                  "protocol_type": "consumer", "protocols": protocols("range")}
        fields.update({k: (v(members) if callable(v) else v) for k, v in overrides.items()})
        return JoinGroupRequest(**fields)
    return build


def _commit(offset: int = 1, partition: int = 0, topic: str = "t", metadata: str = "", **overrides: Any) -> Build:
    def build(members: list[str], generation: int) -> GroupRequest:
        fields: dict[str, Any] = {"group_id": "g", "generation_id": generation, "member_id": members[0],
                                  "topics": (OffsetCommitTopic(topic, (OffsetCommitPartition(
                                      partition, offset, metadata=metadata),)),)}
        fields.update(overrides)
        return OffsetCommitRequest(**fields)
    return build


CASES: dict[str, tuple[Build, ErrorCode]] = {
    "join-empty-group-id": (_join(group_id=""), Errors.INVALID_GROUP_ID),
    "join-unknown-member": (_join(member_id="stranger"), Errors.UNKNOWN_MEMBER_ID),
    "join-unknown-group": (_join(group_id="nope"), Errors.UNKNOWN_MEMBER_ID),
    "join-session-too-small": (_join(session_timeout_ms=999), Errors.INVALID_SESSION_TIMEOUT),
    "join-session-negative": (_join(session_timeout_ms=-5), Errors.INVALID_SESSION_TIMEOUT),
    "join-session-too-large": (_join(session_timeout_ms=2**31 - 1), Errors.INVALID_SESSION_TIMEOUT),
    "join-negative-rebalance-timeout": (_join(rebalance_timeout_ms=-7), Errors.INVALID_REQUEST),
    "join-empty-instance-id": (_join(group_instance_id="", member_id=""), Errors.INVALID_REQUEST),
    "join-new-member-wrong-protocol-type": (_join(member_id="", protocol_type="connect"),
                                            Errors.INCONSISTENT_GROUP_PROTOCOL),
    "join-new-member-unsupported-protocol": (_join(member_id="", protocols=(JoinGroupProtocol("sticky", b""),)),
                                             Errors.INCONSISTENT_GROUP_PROTOCOL),
    "join-new-member-no-protocols": (_join(member_id="", protocols=()), Errors.INCONSISTENT_GROUP_PROTOCOL),
    "sync-empty-group-id": (lambda m, g: SyncGroupRequest(group_id="", generation_id=g, member_id=m[0]),
                            Errors.INVALID_GROUP_ID),
    "sync-unknown-member": (lambda m, g: SyncGroupRequest(group_id="g", generation_id=g, member_id="x"),
                            Errors.UNKNOWN_MEMBER_ID),
    "sync-negative-generation": (lambda m, g: SyncGroupRequest(group_id="g", generation_id=-3, member_id=m[0]),
                                 Errors.ILLEGAL_GENERATION),
    "sync-wrong-protocol": (lambda m, g: SyncGroupRequest(group_id="g", generation_id=g, member_id=m[0],
                                                          protocol_name="sticky"),
                            Errors.INCONSISTENT_GROUP_PROTOCOL),
    "sync-duplicate-assignment": (lambda m, g: SyncGroupRequest(
        group_id="g", generation_id=g, member_id=m[0],
        assignments=(SyncGroupAssignment(m[1], b""), SyncGroupAssignment(m[1], b""))), Errors.INVALID_REQUEST),
    "heartbeat-empty-group-id": (lambda m, g: HeartbeatRequest(group_id="", generation_id=g, member_id=m[0]),
                                 Errors.INVALID_GROUP_ID),
    "heartbeat-unknown-member": (lambda m, g: HeartbeatRequest(group_id="g", generation_id=g, member_id="x"),
                                 Errors.UNKNOWN_MEMBER_ID),
    "heartbeat-unknown-group": (lambda m, g: HeartbeatRequest(group_id="h", generation_id=g, member_id=m[0]),
                                Errors.UNKNOWN_MEMBER_ID),
    "heartbeat-oversized-generation": (lambda m, g: HeartbeatRequest(group_id="g", generation_id=2**31 - 1,
                                                                     member_id=m[0]), Errors.ILLEGAL_GENERATION),
    "leave-empty-group-id": (lambda m, g: LeaveGroupRequest(group_id="", members=(MemberIdentity(m[0]),)),
                             Errors.INVALID_GROUP_ID),
    "leave-unknown-member": (lambda m, g: LeaveGroupRequest(group_id="g", members=(MemberIdentity("x"),)),
                             Errors.UNKNOWN_MEMBER_ID),
    "leave-unknown-instance": (lambda m, g: LeaveGroupRequest(group_id="g", members=(MemberIdentity("", "i9"),)),
                               Errors.UNKNOWN_MEMBER_ID),
    "leave-duplicate-members": (lambda m, g: LeaveGroupRequest(group_id="g", members=(
        MemberIdentity(m[0]), MemberIdentity(m[1]), MemberIdentity(m[0]))), Errors.INVALID_REQUEST),
    "leave-no-members": (lambda m, g: LeaveGroupRequest(group_id="g", members=()), Errors.INVALID_REQUEST),
    "commit-empty-group-id": (_commit(group_id=""), Errors.INVALID_GROUP_ID),
    "commit-unknown-member": (_commit(member_id="x"), Errors.UNKNOWN_MEMBER_ID),
    "commit-no-member-on-active-group": (_commit(member_id="", generation_id=-1), Errors.UNKNOWN_MEMBER_ID),
    "commit-unknown-group-with-generation": (_commit(group_id="h"), Errors.ILLEGAL_GENERATION),
    "commit-negative-partition": (_commit(partition=-1), Errors.UNKNOWN_TOPIC_OR_PARTITION),
    "commit-invalid-topic": (_commit(topic="bad/topic"), Errors.INVALID_TOPIC_EXCEPTION),
    "commit-empty-topic": (_commit(topic=""), Errors.INVALID_TOPIC_EXCEPTION),
    "commit-oversized-metadata": (_commit(metadata="x" * 4097), Errors.OFFSET_METADATA_TOO_LARGE),
    "commit-negative-retention": (_commit(retention_time_ms=-9), Errors.INVALID_REQUEST),
    "fetch-empty-group-id": (lambda m, g: OffsetFetchRequest(group_id=""), Errors.INVALID_GROUP_ID),
    "offset-delete-empty-group-id": (lambda m, g: OffsetDeleteRequest(group_id="", topics=()),
                                     Errors.INVALID_GROUP_ID),
    "offset-delete-unknown-group": (lambda m, g: OffsetDeleteRequest(group_id="h", topics=()),
                                    Errors.GROUP_ID_NOT_FOUND),
    "offset-delete-subscribed-topic": (lambda m, g: OffsetDeleteRequest(group_id="g", topics=(
        OffsetFetchTopic("t", (0,)),)), Errors.GROUP_SUBSCRIBED_TO_TOPIC),
    # Kafka 4.4 describes and deletes an empty group id as a group that does not exist (checked against the broker)
    "describe-empty-group-id": (lambda m, g: DescribeGroupsRequest(groups=("",)), Errors.GROUP_ID_NOT_FOUND),
    "describe-unknown-group": (lambda m, g: DescribeGroupsRequest(groups=("h",)), Errors.GROUP_ID_NOT_FOUND),
    "list-unknown-state": (lambda m, g: ListGroupsRequest(states_filter=("Sleeping",)), Errors.INVALID_REQUEST),
    "delete-empty-group-id": (lambda m, g: DeleteGroupsRequest(groups=("",)), Errors.GROUP_ID_NOT_FOUND),
    "delete-unknown-group": (lambda m, g: DeleteGroupsRequest(groups=("h",)), Errors.GROUP_ID_NOT_FOUND),
    "delete-non-empty-group": (lambda m, g: DeleteGroupsRequest(groups=("g",)), Errors.NON_EMPTY_GROUP),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_gets_error_and_leaves_state_unchanged(
        stable: tuple[CoordinatorTestContext, list[str], int], case: str) -> None:
    """Each malformed or misdirected request gets its Kafka error code, and nothing changes."""
    ctx, members, generation = stable
    build, expected = CASES[case]
    before = _state(ctx)
    response = ctx.call(build(members, generation))
    assert _error(response) == expected
    assert _state(ctx) == before


def test_every_api_has_a_bad_input_case() -> None:
    """The table above covers all ten APIs."""
    prefixes = {case.split("-")[0] for case in CASES}
    assert prefixes == {"join", "sync", "heartbeat", "leave", "commit", "fetch", "offset", "describe", "list",
                        "delete"}
