"""The topic catalog: create, alter, list, describe, change detection, and refusal of bad input."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import pytest
from deltalake import DeltaTable

from groupcoord.state_root import StateRoot
from groupcoord.topics import (
    InvalidPartitionsError,
    InvalidTopicError,
    TopicAlreadyExistsError,
    TopicCatalog,
    TopicError,
    UnknownTopicOrPartitionError,
)
from groupcoord.topics.catalog import CATALOG_SCHEMA

Unchanged = Callable[[Path], AbstractContextManager[None]]
Refused = Callable[..., None]


def test_empty_root_has_no_topics_and_version_minus_one(catalog: TopicCatalog) -> None:
    assert catalog.list() == []
    assert catalog.partition_counts() == {}
    assert catalog.version() == -1


def test_create_then_describe_and_list(catalog: TopicCatalog, root: StateRoot) -> None:
    created = catalog.create("events", 3)
    catalog.create("audit", 1, racks=["r1"])
    info = catalog.describe("events")
    assert info == created
    assert (info.name, info.partitions, info.racks) == ("events", 3, None)
    assert uuid.UUID(info.topic_id)
    assert info.created_at == info.updated_at and info.created_at.utcoffset() is not None
    assert [t.name for t in catalog.list()] == ["audit", "events"]
    assert catalog.describe("audit").rack(0) == "r1"
    assert catalog.partition_counts() == {"events": 3, "audit": 1}
    # The topic's log table exists as soon as the topic does.
    assert DeltaTable.is_deltatable(str(root.topic_path("events")))


def test_a_second_catalog_instance_sees_changes_through_the_version(root: StateRoot, catalog: TopicCatalog) -> None:
    watcher = TopicCatalog(root)
    catalog.create("a", 1)
    first = watcher.version()
    assert watcher.partition_counts() == {"a": 1}
    catalog.alter("a", 4)
    assert watcher.version() == first + 1
    assert watcher.partition_counts() == {"a": 4}


def test_alter_grows_and_keeps_identity_and_creation_time(catalog: TopicCatalog) -> None:
    before = catalog.create("t", 2, racks=["r0", "r1"])
    after = catalog.alter("t", 4, new_racks=["r2", None])
    assert after.partitions == 4
    assert after.racks == ("r0", "r1", "r2", None)
    assert (after.topic_id, after.created_at) == (before.topic_id, before.created_at)
    assert after.updated_at >= before.updated_at
    assert catalog.describe("t") == after


def test_alter_of_a_topic_without_racks_keeps_no_racks(catalog: TopicCatalog) -> None:
    catalog.create("t", 1)
    assert catalog.alter("t", 3).racks is None


@pytest.fixture
def refused(catalog: TopicCatalog, root: StateRoot, unchanged: Unchanged) -> Callable[..., None]:
    """``refused(error, code, message, action)``: the action raises that error and leaves the root untouched."""

    def check(error: type[TopicError], code: int, message: str, action: Callable[[], object]) -> None:
        version = catalog.version()
        with unchanged(root.path), pytest.raises(error, match=message) as caught:
            action()
        assert caught.value.error_code == code
        assert catalog.version() == version

    return check


def test_duplicate_name_is_topic_already_exists_and_changes_nothing(catalog: TopicCatalog, refused: Refused) -> None:
    catalog.create("t", 2)
    refused(TopicAlreadyExistsError, 36, "Topic 't' already exists.", lambda: catalog.create("t", 5))
    assert catalog.describe("t").partitions == 2


def test_if_not_exists_returns_the_existing_topic_without_a_commit(catalog: TopicCatalog) -> None:
    original = catalog.create("t", 2)
    version = catalog.version()
    assert catalog.create("t", 9, if_not_exists=True) == original
    assert catalog.version() == version


@pytest.mark.parametrize("name", ["", ".", "..", "bad name", "x" * 250, "a/b"])
def test_illegal_name_is_invalid_topic_and_changes_nothing(catalog: TopicCatalog, refused: Refused, name: str) -> None:
    refused(InvalidTopicError, 17, "Topic name", lambda: catalog.create(name, 1))


def test_name_colliding_through_dot_and_underscore_is_refused(catalog: TopicCatalog, refused: Refused) -> None:
    catalog.create("a.b", 1)
    refused(InvalidTopicError, 17, "collides with existing topic 'a.b'",
             lambda: catalog.create("a_b", 1))


@pytest.mark.parametrize("partitions", [0, -3])
def test_partitions_below_one_are_invalid_partitions(catalog: TopicCatalog, refused: Refused, partitions: int) -> None:
    refused(InvalidPartitionsError, 37, "larger than 0", lambda: catalog.create("t", partitions))
    assert catalog.list() == []


def test_racks_must_match_the_partition_count(catalog: TopicCatalog, refused: Refused) -> None:
    refused(InvalidPartitionsError, 37, "one rack per partition",
             lambda: catalog.create("t", 3, racks=["r0"]))


@pytest.mark.parametrize(("partitions", "message"), [(2, "which is higher than the requested 2"),
                                                     (3, "already has 3 partitions"),
                                                     (0, "larger than 0")])
def test_alter_never_shrinks_or_keeps_the_count(catalog: TopicCatalog, refused: Refused, partitions: int,
                                                message: str) -> None:
    catalog.create("t", 3)
    refused(InvalidPartitionsError, 37, message, lambda: catalog.alter("t", partitions))
    assert catalog.describe("t").partitions == 3


def test_unknown_topic_is_unknown_topic_or_partition(catalog: TopicCatalog, refused: Refused) -> None:
    catalog.create("t", 1)
    refused(UnknownTopicOrPartitionError, 3, "Topic 'nope' does not exist.",
             lambda: catalog.describe("nope"))
    refused(UnknownTopicOrPartitionError, 3, "Topic 'nope' does not exist.",
             lambda: catalog.alter("nope", 5))


def test_interleaved_writers_never_drop_each_others_topics(root: StateRoot, catalog: TopicCatalog) -> None:
    other = TopicCatalog(root)
    catalog.create("first", 1)
    stale = other.version()
    catalog.create("second", 2)  # ``other`` has not seen this one; its rewrite of the table must keep it
    other.create("third", 3)
    other.alter("second", 5)
    assert other.version() > stale
    assert catalog.partition_counts() == {"first": 1, "second": 5, "third": 3}


def test_a_duplicate_from_another_writer_is_refused(root: StateRoot, catalog: TopicCatalog) -> None:
    other = TopicCatalog(root)
    assert other.partition_counts() == {}
    catalog.create("t", 1)
    with pytest.raises(TopicAlreadyExistsError):
        other.create("t", 7)
    assert catalog.describe("t").partitions == 1


_CREATOR = """
import sys
from groupcoord.state_root import StateRoot
from groupcoord.topics import TopicCatalog, TopicsConfig
catalog = TopicCatalog(StateRoot.open(sys.argv[1]), config=TopicsConfig(commit_backoff_ms=1))
for i in range(5):
    catalog.create(f"{sys.argv[2]}-{i}", i + 1)
    catalog.create("shared", 1, if_not_exists=True)
"""


@pytest.mark.integration
def test_four_concurrent_creator_processes_lose_no_topic(tmp_path: Path) -> None:
    location = tmp_path / "root"
    StateRoot.open(location, create=True)  # the catalog table itself is created by the racing processes
    procs = [subprocess.Popen([sys.executable, "-c", _CREATOR, str(location), f"p{n}"], stderr=subprocess.PIPE,
                              text=True) for n in range(4)]
    errors = [proc.communicate(timeout=120)[1] for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0, 0, 0], errors
    counts = TopicCatalog(StateRoot.open(location)).partition_counts()
    expected = {f"p{n}-{i}": i + 1 for n in range(4) for i in range(5)}
    assert counts == {**expected, "shared": 1}
    # 21 topics, so at least 21 conditional commits after the table's creation, and no lost update.
    assert len(DeltaTable(str(location / "catalog")).history()) >= 22


def test_catalog_table_is_plain_delta_1_2_with_the_documented_schema(catalog: TopicCatalog,
                                                                     root: StateRoot) -> None:
    catalog.create("t", 2, racks=["a", "b"])
    table = DeltaTable(str(root.catalog_path))
    protocol = table.protocol()
    assert (protocol.min_reader_version, protocol.min_writer_version) == (1, 2)
    schema = table.to_pyarrow_table().schema
    assert schema.names == CATALOG_SCHEMA.names
    assert str(schema.field("created_at").type) == "timestamp[us, tz=UTC]"
    # Each change rewrites the small table: exactly one live file however many changes.
    catalog.alter("t", 3, new_racks=["c"])
    assert len(DeltaTable(str(root.catalog_path)).file_uris()) == 1
