"""The ``acls`` state table: a row per created binding, a deleted row per removed one, and a rebuild that deletes
the bindings the log no longer has."""

from __future__ import annotations

from pathlib import Path

from groupcoord.security.acls import AclBinding, AclFilter, Operation, PatternType, Permission, ResourceType
from groupcoord.state.materializer import Materializer
from groupcoord.state.schema import ACLS
from groupcoord.state.views import read_rows, read_view
from groupcoord.state_root import StateRoot
from tests.state.scenario import LoggedCoordinator

READ = AclBinding(ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:alice", "*", Operation.READ,
                  Permission.ALLOW)
DENY = AclBinding(ResourceType.GROUP, "g-", PatternType.PREFIXED, "User:*", "10.0.0.1", Operation.DELETE,
                  Permission.DENY)


def _shown(root: StateRoot) -> list[tuple[str, ...]]:
    return [tuple(row[c] for c in ("resource_type", "resource_name", "pattern_type", "principal", "host",
                                   "operation", "permission")) for row in read_view(root, ACLS).to_pylist()]


def test_created_and_deleted_bindings_become_rows_and_the_view_shows_the_current_ones(tmp_path: Path) -> None:
    root = StateRoot.open(tmp_path / "root", create=True)
    coordinator = LoggedCoordinator(root)
    coordinator.alter_acls(creations=(READ, DENY))
    coordinator.materialize()
    assert _shown(root) == [("GROUP", "g-", "PREFIXED", "User:*", "10.0.0.1", "DELETE", "DENY"),
                            ("TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW")]
    coordinator.alter_acls(deletions=(AclFilter(ResourceType.GROUP),))
    coordinator.materialize()
    assert _shown(root) == [("TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW")]
    assert sorted(read_rows(root, ACLS).column("deleted").to_pylist()) == [False, False, True]


def test_a_rebuild_deletes_the_bindings_the_log_lost(tmp_path: Path) -> None:
    root = StateRoot.open(tmp_path / "root", create=True)
    coordinator = LoggedCoordinator(root)
    coordinator.alter_acls(creations=(READ, DENY))
    coordinator.materialize()
    kept = [r for r in coordinator.ctx.coordinator.snapshot_records() if getattr(r, "binding", None) == READ]
    Materializer(root).rebuild(kept, log_version=10, epoch=2)
    assert _shown(root) == [("TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW")]
