"""OffsetCommit and OffsetDelete against the topic catalog, as a Kafka broker checks its metadata: partitions that do
not exist get UNKNOWN_TOPIC_OR_PARTITION and never reach the coordinator; a topic created while serving is known at
its first use."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kafka.protocol.admin import DescribeGroupsRequest
from kafka.protocol.consumer import OffsetDeleteRequest, OffsetFetchRequest

from groupcoord.protocol.errors import Errors
from groupcoord.topics import TopicCatalog
from tests.parity.wire import commit_partition, offset_commit
from tests.server.conftest import CoordinatorStack, RawClient

pytestmark = [pytest.mark.integration]

UNKNOWN = Errors.UNKNOWN_TOPIC_OR_PARTITION.code


def _errors(response: Any) -> dict[tuple[str, int], int]:
    return {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}


def _fetched(client: RawClient, group: str, topic: str, partitions: list[int]) -> dict[int, int]:
    response = client.request(OffsetFetchRequest(version=7, group_id=group, require_stable=False, topics=[
        OffsetFetchRequest.OffsetFetchRequestTopic(name=topic, partition_indexes=partitions)]))
    return {p.partition_index: p.committed_offset for t in response.topics for p in t.partitions}


def _offset_delete(group: str, partitions: dict[str, list[int]]) -> OffsetDeleteRequest:
    topics = [OffsetDeleteRequest.OffsetDeleteRequestTopic(
        name=name, partitions=[OffsetDeleteRequest.OffsetDeleteRequestTopic.OffsetDeleteRequestPartition(
            partition_index=p) for p in parts]) for name, parts in partitions.items()]
    return OffsetDeleteRequest(version=0, group_id=group, topics=topics)


def test_commit_refuses_missing_partitions_and_stores_the_rest(
        coordinator_stack: Callable[..., CoordinatorStack], raw_client: Callable[..., RawClient]) -> None:
    stack = coordinator_stack({"orders": 2})
    client = raw_client(stack.running.address)
    response = client.request(offset_commit("g", 8, {
        "orders": [commit_partition(0, 5), commit_partition(2, 6), commit_partition(-1, 7)],
        "nope": [commit_partition(0, 8)]}))
    assert _errors(response) == {("orders", 0): 0, ("orders", 2): UNKNOWN, ("orders", -1): UNKNOWN,
                                 ("nope", 0): UNKNOWN}
    assert _fetched(client, "g", "orders", [0, 2]) == {0: 5, 2: -1}


def test_a_commit_of_nothing_that_exists_creates_no_group(
        coordinator_stack: Callable[..., CoordinatorStack], raw_client: Callable[..., RawClient]) -> None:
    stack = coordinator_stack({"orders": 1})
    client = raw_client(stack.running.address)
    before = stack.persisted()
    response = client.request(offset_commit("ghost", 8, {"nope": [commit_partition(0, 1)]}))
    assert _errors(response) == {("nope", 0): UNKNOWN}
    [described] = client.request(DescribeGroupsRequest(version=5, groups=["ghost"],
                                                       include_authorized_operations=False)).groups
    assert (described.error_code, described.group_state) == (0, "Dead")
    assert stack.persisted() == before


def test_a_topic_created_while_serving_is_known_at_its_first_commit(
        coordinator_stack: Callable[..., CoordinatorStack], raw_client: Callable[..., RawClient]) -> None:
    stack = coordinator_stack({"orders": 1})
    client = raw_client(stack.running.address)
    assert _errors(client.request(offset_commit("g", 8, {"orders": [commit_partition(0, 1)]}))) == {("orders", 0): 0}
    TopicCatalog(stack.root).create("refunds", 3)
    assert _errors(client.request(offset_commit("g", 8, {"refunds": [commit_partition(2, 4)]}))) == {
        ("refunds", 2): 0}


def test_offset_delete_refuses_missing_partitions_and_deletes_the_rest(
        coordinator_stack: Callable[..., CoordinatorStack], raw_client: Callable[..., RawClient]) -> None:
    stack = coordinator_stack({"orders": 2})
    client = raw_client(stack.running.address)
    client.request(offset_commit("g", 8, {"orders": [commit_partition(0, 5), commit_partition(1, 6)]}))
    response = client.request(_offset_delete("g", {"orders": [1, 5], "nope": [0]}))
    assert response.error_code == 0
    assert _errors(response) == {("orders", 1): 0, ("orders", 5): UNKNOWN, ("nope", 0): UNKNOWN}
    assert _fetched(client, "g", "orders", [0, 1]) == {0: 5, 1: -1}
    unknown_group = client.request(_offset_delete("nobody", {"nope": [0]}))
    assert (unknown_group.error_code, unknown_group.topics) == (Errors.GROUP_ID_NOT_FOUND.code, [])
