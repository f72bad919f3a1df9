"""Partition bounds brought forward commit by commit: the same as aggregating every file, or a fallback."""

from __future__ import annotations

from deltalake import DeltaTable

from groupcoord.state_root import StateRoot
from groupcoord.topics import ProducerRecord, TopicCatalog, TopicLog
from groupcoord.topics.maintenance import maintain_topic_logs
from groupcoord.topics.offset_index import offsets_after_commits, offsets_from_stats


def _produce(log: TopicLog, commits: int) -> None:
    for n in range(commits):
        log.produce([ProducerRecord(b"v", partition=p) for p in range(n % 3 + 1) for _ in range(n + 1)])


def test_a_reader_follows_another_writers_commits_without_aggregating(catalog: TopicCatalog, root: StateRoot
                                                                     ) -> None:
    catalog.create("events", 3)
    writer, reader = TopicLog(root, "events"), TopicLog(root, "events")
    _produce(writer, 2)
    before = reader.offsets()
    version = DeltaTable(str(root.topic_path("events"))).version()
    _produce(writer, 5)
    table = DeltaTable(str(root.topic_path("events")))
    stepped = offsets_after_commits(root.topic_path("events").local_path, dict(before), version, table.version())
    assert stepped == offsets_from_stats(table) == reader.offsets()


def test_a_compaction_commit_leaves_the_bounds_as_they_were(catalog: TopicCatalog, root: StateRoot) -> None:
    catalog.create("events", 3)
    log = TopicLog(root, "events")
    _produce(log, 6)
    path = root.topic_path("events").local_path
    version = DeltaTable(str(path)).version()
    bounds = log.offsets()
    assert maintain_topic_logs(root, retention_hours=0)[0].compacted_files > 0
    assert offsets_after_commits(path, dict(bounds), version, DeltaTable(str(path)).version()) == bounds
    assert TopicLog(root, "events").offsets() == bounds


def test_an_unreadable_commit_falls_back(catalog: TopicCatalog, root: StateRoot) -> None:
    catalog.create("events", 3)
    log = TopicLog(root, "events")
    _produce(log, 3)
    path = root.topic_path("events").local_path
    version = DeltaTable(str(path)).version()
    assert offsets_after_commits(path, {}, version, version + 1) is None  # no such commit yet
    DeltaTable(str(path)).delete("offset = 0")  # removes files with data changes
    assert offsets_after_commits(path, {}, version, DeltaTable(str(path)).version()) is None
