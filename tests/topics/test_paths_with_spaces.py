"""A state root under a directory whose name has a space: delta-rs names such a table by a percent-encoded
``file://`` URI (``with%20space``), which the readers once took as the directory itself."""

from __future__ import annotations

from pathlib import Path

from groupcoord.admin.wire import AdminClient
from groupcoord.config import resolve_config
from groupcoord.host.background import BackgroundCoordinator
from groupcoord.state.schema import OFFSETS
from groupcoord.state.views import read_view
from groupcoord.state_root import StateRoot
from groupcoord.topics import ProducerRecord, TopicCatalog, TopicLog


def test_a_state_root_in_a_directory_with_a_space_serves_topics_and_commits(tmp_path: Path) -> None:
    root = StateRoot.open(tmp_path / "with space" / "root", create=True)
    TopicCatalog(root).create("orders", 2)
    TopicLog(root, "orders").produce(ProducerRecord(b"v", partition=1) for _ in range(3))
    assert TopicLog(root, "orders").end_offsets() == {0: 0, 1: 3}
    assert [r.value for r in TopicLog(root, "orders").read_records(1, 0)] == [b"v"] * 3
    with BackgroundCoordinator(root, resolve_config(), listen="127.0.0.1:0") as coordinator, \
            AdminClient(str(coordinator.address), timeout_ms=10_000) as admin:
        committed = admin.commit_offsets("billing", {("orders", 1): 2})
        assert {e.name for e in committed.values()} == {"NONE"}
    offsets = read_view(root, OFFSETS).to_pylist()
    assert [(r["group_id"], r["topic"], r["partition"], r["offset"]) for r in offsets] == [("billing", "orders", 1, 2)]
