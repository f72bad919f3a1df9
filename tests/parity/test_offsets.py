"""Parity of offset commits and fetches: every version both sides serve, edge values, and generation fencing.

Each scenario runs on Kafka 4.4.0's coordinator, then on ``groupcoord serve``; the normalised answers must be equal.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.parity.observe import Observation, assert_parity
from tests.parity.targets import OTHER_TOPIC, TOPIC, UNKNOWN_TOPIC, Target, group_name
from tests.parity.wire import (
    JOIN_VERSIONS,
    RawMember,
    Wire,
    commit_partition,
    offset_commit,
    rebalance,
    sync_all,
    versions_for,
)

pytestmark = [pytest.mark.kafka, pytest.mark.integration]

COMMIT_VERSIONS = range(2, 10)
"""OffsetCommit versions in kafka-python's schemas, which both sides serve (v10: :func:`commits_by_topic_id`)."""
FETCH_VERSIONS = range(1, 10)
"""OffsetFetch versions in kafka-python's schemas, which both sides serve (v10: :func:`commits_by_topic_id`)."""
OFFSET_COMMIT = 8
OFFSET_FETCH = 9
METADATA_MAX_BYTES = 4096
"""``offset.metadata.max.bytes``: Kafka's default, and groupcoord's."""


def simple_commit(target: Target, group: str, commit_version: int, fetch_version: int) -> Observation:
    """A simple consumer (generation -1, no member id) commits to a new group, then fetches what it committed."""
    observation = Observation()
    wire = Wire(target, observation)
    try:
        wire.commit("commit two partitions", offset_commit(group, commit_version, {
            TOPIC: [commit_partition(0, 10, "m0"), commit_partition(2, 12, "")]}))
        wire.fetch("fetch them and one never committed", group, fetch_version, {TOPIC: [0, 1, 2]})
        if fetch_version >= 2:
            wire.fetch("fetch every committed offset", group, fetch_version, None)
        wire.fetch("fetch from a group that does not exist", f"{group}-none", fetch_version, {TOPIC: [0]})
        wire.describe("the group after simple commits", group)
    finally:
        wire.close()
    return observation


@pytest.mark.parametrize("version", COMMIT_VERSIONS)
def test_simple_commit_at_each_commit_version(targets: tuple[Target, Target], request: pytest.FixtureRequest,
                                              version: int) -> None:
    assert_parity(targets, simple_commit, group_name(request.node.name), version, 8)


@pytest.mark.parametrize("version", FETCH_VERSIONS)
def test_offset_fetch_at_each_version(targets: tuple[Target, Target], request: pytest.FixtureRequest,
                                      version: int) -> None:
    assert_parity(targets, simple_commit, group_name(request.node.name), 8, version)


def _commit_body(group: str, topics: list[tuple[uuid.UUID, list[int]]]) -> dict[str, Any]:
    return {"GroupId": group, "GenerationIdOrMemberEpoch": -1, "MemberId": "", "GroupInstanceId": None,
            "Topics": [{"TopicId": topic_id, "Partitions": [
                {"PartitionIndex": p, "CommittedOffset": 100 + p, "CommittedLeaderEpoch": -1,
                 "CommittedMetadata": None if p else "m"} for p in partitions]} for topic_id, partitions in topics]}


def _fetch_body(group: str, topics: list[tuple[uuid.UUID, list[int]]] | None) -> dict[str, Any]:
    wanted = None if topics is None else [{"TopicId": t, "PartitionIndexes": parts} for t, parts in topics]
    return {"Groups": [{"GroupId": group, "MemberId": None, "MemberEpoch": -1, "Topics": wanted}],
            "RequireStable": False}


def commits_by_topic_id(target: Target, group: str) -> Observation:
    """OffsetCommit and OffsetFetch v10, which name topics by id: a known topic, a partition past its end, an id that
    names no topic (UNKNOWN_TOPIC_ID), the zero id; then fetches by id, of every offset, and of a group that does not
    exist. Each side's own ids are named by topic before the answers are compared."""
    observation = Observation()
    wire = Wire(target, observation)
    try:
        ids = wire.topic_ids()
        topic_id = next(topic_id for topic_id, name in ids.items() if name == TOPIC)
        other_id = next(topic_id for topic_id, name in ids.items() if name == OTHER_TOPIC)
        nowhere = uuid.uuid4()
        wire.schema_call("commit by id", OFFSET_COMMIT, 10, _commit_body(
            group, [(topic_id, [0, 2, 9]), (nowhere, [0]), (other_id, [1])]), ids)
        wire.schema_call("commit to the zero id only", OFFSET_COMMIT, 10, _commit_body(
            group, [(uuid.UUID(int=0), [0])]), ids)
        wire.schema_call("fetch by id", OFFSET_FETCH, 10, _fetch_body(
            group, [(topic_id, [0, 1, 2]), (nowhere, [0, 1])]), ids)
        wire.schema_call("fetch every offset", OFFSET_FETCH, 10, _fetch_body(group, None), ids, hash_ordered=True)
        wire.schema_call("fetch from a group that does not exist", OFFSET_FETCH, 10, _fetch_body(
            f"{group}-none", [(other_id, [0]), (nowhere, [3])]), ids)
        wire.fetch("the same offsets at v9, by name", group, 9, {TOPIC: [0, 2], OTHER_TOPIC: [1]})
    finally:
        wire.close()
    return observation


def test_commits_and_fetches_by_topic_id(targets: tuple[Target, Target], request: pytest.FixtureRequest) -> None:
    assert_parity(targets, commits_by_topic_id, group_name(request.node.name))


EDGE_COMMITS: dict[str, tuple[str, int, int, str | None]] = {
    "offset-zero": (TOPIC, 0, 0, ""),
    "offset-minus-one": (TOPIC, 0, -1, ""),
    "offset-minus-two": (TOPIC, 0, -2, ""),
    "offset-max-int64": (TOPIC, 0, 2**63 - 1, ""),
    "metadata-null": (TOPIC, 0, 5, None),
    "metadata-at-the-limit": (TOPIC, 0, 5, "x" * METADATA_MAX_BYTES),
    "metadata-over-the-limit": (TOPIC, 0, 5, "x" * (METADATA_MAX_BYTES + 1)),
    "metadata-multibyte": (TOPIC, 0, 5, "\u00e9" * (METADATA_MAX_BYTES // 2 + 1)),
    "unknown-topic": (UNKNOWN_TOPIC, 0, 5, ""),
    "negative-partition": (TOPIC, -1, 5, ""),
    "partition-past-the-end": (TOPIC, 3, 5, ""),
    "partition-max-int32": (TOPIC, 2**31 - 1, 5, ""),
}
"""One commit each: (topic, partition, offset, metadata)."""


def edge_commit(target: Target, group: str, case: str) -> Observation:
    """A simple commit of one edge value at OffsetCommit v2 and v9, each followed by an OffsetFetch of it."""
    topic, partition, offset, metadata = EDGE_COMMITS[case]
    observation = Observation()
    wire = Wire(target, observation)
    try:
        for version in (2, 9):
            wire.commit(f"commit v{version}", offset_commit(f"{group}-v{version}", version, {
                topic: [commit_partition(partition, offset, metadata)]}))
            wire.fetch(f"fetch v{version}", f"{group}-v{version}", 8, {topic: [partition]})
    finally:
        wire.close()
    return observation


@pytest.mark.parametrize("case", EDGE_COMMITS)
def test_edge_value_commit(targets: tuple[Target, Target], request: pytest.FixtureRequest, case: str) -> None:
    assert_parity(targets, edge_commit, group_name(request.node.name), case)


def one(partition: int, offset: int) -> dict[str, list[Any]]:
    """Offsets of one partition of ``TOPIC``, for a commit."""
    return {TOPIC: [commit_partition(partition, offset, "")]}


def fenced_commits(target: Target, group: str, version: int) -> Observation:
    """Member commits against the group's generation: current, stale, future, unknown member, simple (-1), during
    each rebalance phase, and once the group is empty again."""
    observation = Observation()
    versions = versions_for(version)
    a = RawMember(target, observation, group, versions, "a")
    b = RawMember(target, observation, group, versions, "b")
    try:
        rebalance("a alone", [a])
        a.commit_offsets("current generation", one(0, 1))
        a.commit_offsets("stale generation", one(0, 2), generation=a.generation - 1)
        a.commit_offsets("future generation", one(0, 3), generation=a.generation + 1)
        a.commit_offsets("unknown member id", one(0, 4), member_id="raw-test-unknown")
        a.commit_offsets("simple commit to a group with members", one(0, 5), generation=-1, member_id="")
        b.join("b asks for a member id")
        b_joins = b.start_join()
        a.wait_for_state(group, "PreparingRebalance")
        a.commit_offsets("old generation while preparing a rebalance", one(1, 6))
        a.join("a rejoins")
        b.finish_join("b joins", b_joins)
        a.commit_offsets("new generation before syncing", one(1, 7))
        sync_all("with b", [a, b])
        a.commit_offsets("new generation after syncing", one(1, 8))
        a.leave("a leaves")
        b.leave("b leaves")
        a.commit_offsets("the last generation, once empty", one(2, 9))
        a.commit_offsets("simple commit, once empty", one(2, 10), generation=-1, member_id="")
        a.fetch("what was committed", group, versions.fetch, {TOPIC: [0, 1, 2]})
    finally:
        a.close()
        b.close()
    return observation


@pytest.mark.parametrize("version", JOIN_VERSIONS)
def test_commits_fenced_by_generation(targets: tuple[Target, Target], request: pytest.FixtureRequest,
                                      version: int) -> None:
    assert_parity(targets, fenced_commits, group_name(request.node.name), version)


def offset_delete(target: Target, group: str) -> Observation:
    """OffsetDelete of a subscribed and an unsubscribed topic while the group has a member, then once it is empty."""
    observation = Observation()
    member = RawMember(target, observation, group, versions_for(9), "a")
    try:
        rebalance("a alone", [member])
        member.commit_offsets("commit a subscribed and an unsubscribed topic", {
            TOPIC: [commit_partition(0, 1)], OTHER_TOPIC: [commit_partition(0, 2)]})
        member.offset_delete("delete the subscribed topic's offset", group, {TOPIC: [0]})
        member.offset_delete("delete the unsubscribed topic's offsets", group, {OTHER_TOPIC: [0, 1]})
        member.leave("a leaves")
        member.offset_delete("delete the topic's offset once empty", group, {TOPIC: [0]})
        member.fetch("nothing left", group, 8, None)
        member.offset_delete("delete an offset of a group that does not exist", f"{group}-none", {TOPIC: [0]})
    finally:
        member.close()
    return observation


def test_offset_delete(targets: tuple[Target, Target], request: pytest.FixtureRequest) -> None:
    assert_parity(targets, offset_delete, group_name(request.node.name))


def offset_delete_of_an_unknown_topic(target: Target, group: str) -> Observation:
    """OffsetDelete naming a topic that does not exist, in a group that has offsets."""
    observation = Observation()
    wire = Wire(target, observation)
    try:
        wire.commit("commit", offset_commit(group, 8, one(0, 1)))
        wire.offset_delete("delete an unknown topic's offset", group, {UNKNOWN_TOPIC: [0]})
    finally:
        wire.close()
    return observation


def test_offset_delete_of_an_unknown_topic(targets: tuple[Target, Target], request: pytest.FixtureRequest) -> None:
    assert_parity(targets, offset_delete_of_an_unknown_topic, group_name(request.node.name))


def delete_groups(target: Target, group: str, version: int) -> Observation:
    """DeleteGroups of a group with a member, then of the same group once empty (it keeps its offsets)."""
    observation = Observation()
    member = RawMember(target, observation, group, versions_for(9), "a")
    try:
        rebalance("a alone", [member])
        member.commit_offsets("commit", one(0, 1))
        member.delete_groups("delete the group with a member", [group], version)
        member.leave("a leaves")
        member.delete_groups("delete the empty group, one that does not exist, and the empty group id",
                             [group, f"{group}-none", ""], version)
        member.fetch("no offsets after the delete", group, 8, {TOPIC: [0]})
        member.delete_groups("delete it again", [group], version)
    finally:
        member.close()
    return observation


@pytest.mark.parametrize("version", range(3))
def test_delete_groups(targets: tuple[Target, Target], request: pytest.FixtureRequest, version: int) -> None:
    assert_parity(targets, delete_groups, group_name(request.node.name), version)


def group_emptied_by_offset_delete(target: Target, group: str) -> Observation:
    """A member commits and leaves; OffsetDelete removes the group's last offset: is the group still there?"""
    observation = Observation()
    member = RawMember(target, observation, group, versions_for(9), "a")
    try:
        rebalance("a alone", [member])
        member.commit_offsets("commit", one(0, 1))
        member.leave("a leaves")
        member.offset_delete("delete the group's last offset", group, {TOPIC: [0]})
        member.describe("the group without members or offsets", group)
        member.list_groups("listed", [group])
        member.commit_offsets("commit as the member that left", one(0, 2))
        member.delete_groups("delete the group", [group])
    finally:
        member.close()
    return observation


def test_group_emptied_by_offset_delete(targets: tuple[Target, Target], request: pytest.FixtureRequest) -> None:
    assert_parity(targets, group_emptied_by_offset_delete, group_name(request.node.name))
