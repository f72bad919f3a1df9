"""Offsets and the admin APIs of consumer groups (KIP-848), as Kafka 4.4 answers them: commits and fetches judged
by member epoch, OffsetDelete of subscribed topics, DescribeGroups, ListGroups with its type and state filters,
DeleteGroups."""

from __future__ import annotations

import dataclasses

import pytest

from groupcoord.log.memory import InMemoryRecordLog
from groupcoord.protocol import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    Errors,
    ListGroupsRequest,
    ListGroupsResponse,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitTopic,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchTopic,
)
from groupcoord.protocol.errors import ErrorCode
from tests.narrowing import expect

from .consumer_context import CONFIG, SESSION_MS, ConsumerGroupContext, T, parts


@pytest.fixture
def ctx() -> ConsumerGroupContext:
    """Group g: a holds t-0, t-1 at epoch 2 (assigned at 1), b holds t-2, t-3 (assigned at 2)."""
    c = ConsumerGroupContext(InMemoryRecordLog())
    c.join("a")
    c.join("b")
    c.beat("a", 1, parts(T, 0, 1, 2, 3))
    c.beat("a", 1, parts(T, 0, 1))
    c.beat("b", 2, {})
    return c


def _commit(ctx: ConsumerGroupContext, member: str, epoch: int, *partitions: int,
            api_version: int = 9) -> list[ErrorCode]:
    token = ctx.call(OffsetCommitRequest(
        group_id="g", generation_id=epoch, member_id=member, api_version=api_version,
        topics=(OffsetCommitTopic("t", tuple(OffsetCommitPartition(p, 10 + p) for p in partitions)),)))
    response = expect(ctx.response(token), OffsetCommitResponse)
    return [p.error for t in response.topics for p in t.partitions]


def test_a_member_commits_at_its_epoch_and_an_older_epoch_only_what_it_held_then(ctx: ConsumerGroupContext) -> None:
    """KIP-1251: at epoch 2 a commits anything; at epoch 1 only partitions assigned at or before 1 (its t-0, t-1):
    one of b's fails the whole commit, as Kafka 4.4's check throws out of it; a newer epoch is STALE_MEMBER_EPOCH;
    a stranger UNKNOWN_MEMBER_ID; OffsetCommit v8 UNSUPPORTED_VERSION."""
    assert _commit(ctx, "a", 2, 0, 1) == [Errors.NONE, Errors.NONE]
    assert _commit(ctx, "a", 1, 0, 2) == [Errors.STALE_MEMBER_EPOCH, Errors.STALE_MEMBER_EPOCH]
    assert _commit(ctx, "a", 1, 1) == [Errors.NONE]
    assert _commit(ctx, "b", 1, 2) == [Errors.STALE_MEMBER_EPOCH]
    assert _commit(ctx, "a", 3, 0) == [Errors.STALE_MEMBER_EPOCH]
    assert _commit(ctx, "x", 2, 0) == [Errors.UNKNOWN_MEMBER_ID]
    assert _commit(ctx, "a", 2, 0, api_version=8) == [Errors.UNSUPPORTED_VERSION]
    fetched = expect(ctx.response(ctx.call(OffsetFetchRequest(group_id="g", topics=None))), OffsetFetchResponse)
    assert {(t.name, p.partition): p.offset for t in fetched.topics for p in t.partitions} == {
        ("t", 0): 10, ("t", 1): 11}


def test_a_fetch_naming_a_member_must_be_at_its_epoch(ctx: ConsumerGroupContext) -> None:
    """OffsetFetch with member id and epoch: exactly the member's epoch, else STALE_MEMBER_EPOCH; without a member
    it is answered as for any group."""
    def fetch(member_id: str | None, epoch: int) -> ErrorCode:
        request = OffsetFetchRequest(group_id="g", topics=(OffsetFetchTopic("t", (0,)),), member_id=member_id,
                                     member_epoch=epoch)
        return expect(ctx.response(ctx.call(request)), OffsetFetchResponse).error

    assert fetch("a", 2) == Errors.NONE
    assert fetch(None, -1) == Errors.NONE
    assert fetch("a", 1) == Errors.STALE_MEMBER_EPOCH
    assert fetch("x", 2) == Errors.UNKNOWN_MEMBER_ID


def test_offsets_of_a_subscribed_topic_cannot_be_deleted(ctx: ConsumerGroupContext) -> None:
    """OffsetDelete: GROUP_SUBSCRIBED_TO_TOPIC for t, which members subscribe to; u's offsets go."""
    _commit(ctx, "a", 2, 0)
    ctx.call(OffsetCommitRequest(group_id="g", generation_id=2, member_id="a",
                                 topics=(OffsetCommitTopic("u", (OffsetCommitPartition(0, 3),)),)))
    token = ctx.call(OffsetDeleteRequest(group_id="g", topics=(OffsetFetchTopic("t", (0,)),
                                                               OffsetFetchTopic("u", (0,)))))
    response = expect(ctx.response(token), OffsetDeleteResponse)
    assert [(t.name, p.error) for t in response.topics for p in t.partitions] == [
        ("t", Errors.GROUP_SUBSCRIBED_TO_TOPIC), ("u", Errors.NONE)]
    assert {(t, p) for g, t, p, _ in ctx.coordinator.hard_state().offsets} == {("t", 0)}


def test_list_groups_shows_both_types_and_filters_by_group_type_and_state(ctx: ConsumerGroupContext) -> None:
    """A consumer group is listed with group type and protocol type ``consumer`` and its state; the type filter is
    the group type, both filters case-insensitive (Kafka's ListGroups v5)."""
    ctx.call(OffsetCommitRequest(group_id="simple", topics=(OffsetCommitTopic("t", (OffsetCommitPartition(0, 1),)),)))

    def listed(**filters: tuple[str, ...]) -> list[tuple[str, str, str, str]]:
        response = expect(ctx.response(ctx.call(ListGroupsRequest(**filters))), ListGroupsResponse)
        return [(g.group_id, g.group_type, g.protocol_type, g.state) for g in response.groups]

    assert listed() == [("g", "consumer", "consumer", "Stable"), ("simple", "classic", "", "Empty")]
    assert listed(types_filter=("Consumer",)) == [("g", "consumer", "consumer", "Stable")]
    assert listed(types_filter=("classic",)) == [("simple", "classic", "", "Empty")]
    assert listed(states_filter=("stable",)) == [("g", "consumer", "consumer", "Stable")]
    assert listed(states_filter=("Reconciling",)) == []


def test_describe_groups_does_not_describe_a_consumer_group(ctx: ConsumerGroupContext) -> None:
    """As Kafka 4.4: DescribeGroups answers GROUP_ID_NOT_FOUND, Dead, "Group g is not a classic group." (the admin
    client describes consumer groups with ConsumerGroupDescribe)."""
    (described,) = expect(ctx.response(ctx.call(DescribeGroupsRequest(groups=("g",)))), DescribeGroupsResponse).groups
    assert (described.error, described.state, described.error_message) == (
        Errors.GROUP_ID_NOT_FOUND, "Dead", "Group g is not a classic group.")


def test_delete_groups_deletes_an_empty_consumer_group_with_its_offsets(ctx: ConsumerGroupContext) -> None:
    """NON_EMPTY_GROUP while it has members; once they left, the group and its offsets are tombstoned."""
    _commit(ctx, "a", 2, 0)

    def delete() -> ErrorCode:
        response = expect(ctx.response(ctx.call(DeleteGroupsRequest(groups=("g",)))), DeleteGroupsResponse)
        return response.results[0].error

    assert delete() == Errors.NON_EMPTY_GROUP
    ctx.leave("a")
    ctx.leave("b")
    assert delete() == Errors.NONE
    assert ctx.coordinator.consumer_group("g") is None
    assert ctx.coordinator.hard_state().offsets == () and ctx.coordinator.hard_state().consumer_groups == ()
    assert delete() == Errors.GROUP_ID_NOT_FOUND


def test_offsets_of_unsubscribed_topics_expire_and_an_empty_group_without_offsets_goes() -> None:
    """Kafka's rule for consumer groups: an offset of a topic a member subscribes to never expires; others expire
    a retention after their commit; the empty group left without offsets is deleted."""
    ctx = ConsumerGroupContext(InMemoryRecordLog(), config=dataclasses.replace(CONFIG, offsets_retention_ms=30_000))
    ctx.join("a")
    _commit(ctx, "a", 1, 0)
    ctx.call(OffsetCommitRequest(group_id="g", generation_id=1, member_id="a",
                                 topics=(OffsetCommitTopic("u", (OffsetCommitPartition(0, 3),)),)))
    ctx.clock.advance(30_000)
    ctx.absorb(ctx.coordinator.expire_offsets(ctx.now))
    assert {(t, p) for _, t, p, _ in ctx.coordinator.hard_state().offsets} == {("t", 0)}
    ctx.sleep(SESSION_MS)  # a's session runs out: the group is empty, nobody subscribes to t
    ctx.absorb(ctx.coordinator.expire_offsets(ctx.now))
    assert ctx.coordinator.hard_state().offsets == () and ctx.coordinator.consumer_group("g") is None
