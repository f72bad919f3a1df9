"""The catalog watcher the coordinator polls every metadata.refresh.ms."""

from __future__ import annotations

from groupcoord.state_root import StateRoot
from groupcoord.topics import TopicCatalog, TopicsConfig
from groupcoord.topics.watch import CatalogWatcher


def test_watcher_reports_the_first_state_then_only_real_changes(root: StateRoot, catalog: TopicCatalog) -> None:
    catalog.create("a", 1)
    watcher = CatalogWatcher(TopicCatalog(root))
    first = watcher.poll()
    assert first is not None
    assert (first.partition_counts, first.added, first.grown) == ({"a": 1}, frozenset({"a"}), frozenset())
    assert watcher.poll() is None
    catalog.alter("a", 3)
    catalog.create("b", 2)
    change = watcher.poll()
    assert change is not None
    assert change.partition_counts == {"a": 3, "b": 2}
    assert (change.added, change.grown) == (frozenset({"b"}), frozenset({"a"}))
    assert change.version == first.version + 2
    assert watcher.poll() is None


def test_watcher_on_an_empty_root_reports_no_topics_once(root: StateRoot) -> None:
    watcher = CatalogWatcher(TopicCatalog(root, config=TopicsConfig(metadata_refresh_ms=250)))
    change = watcher.poll()
    assert change is not None and change.partition_counts == {} and change.version == -1
    assert watcher.poll() is None
    assert watcher.interval_s == 0.25
