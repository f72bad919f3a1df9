"""Consumer groups (KIP-848) in the state tables: each group the records touch is written as it stands (its epoch and
state, its members with their epochs, what each member owns, topics by name), through a revocation, members leaving
and a rebuild; ``groupcoord groups describe`` reads them as it reads classic groups."""

from __future__ import annotations

from typing import Any

import pytest

from groupcoord.cli.main import main
from groupcoord.log.memory import InMemoryRecordLog
from groupcoord.state.materializer import CommittedBatch, Materializer
from groupcoord.state.schema import ASSIGNMENTS, GROUPS, MEMBERS
from groupcoord.state.views import read_view
from groupcoord.state_root import StateRoot
from groupcoord.topics import TopicCatalog, catalog
from tests.coordinator.consumer_context import TOPICS, ConsumerGroupContext, T

from .scenario import at, batches_after


class ConsumerGroupTables:
    """The core's consumer groups logging to an in-memory log, materialized into ``root`` on demand."""

    def __init__(self, root: StateRoot) -> None:
        self.root = root
        self.ctx = ConsumerGroupContext(InMemoryRecordLog(), start_ms=1_714_550_400_000)
        self.materializer = Materializer(root)
        self.applied = self.ctx.log.version()

    def materialize(self) -> None:
        """Apply the batches logged since the last call."""
        batches = [CommittedBatch(records=records, log_version=v, epoch=1, committed_at=at(self.ctx.now))
                   for v, records in batches_after(self.ctx.log, self.applied)]
        self.applied = self.ctx.log.version()
        self.materializer.apply_batches(batches)

    def groups(self) -> list[tuple[Any, ...]]:
        """(group, generation, state, protocol type, members) of each group the tables show."""
        return [(r["group_id"], r["generation"], r["state"], r["protocol_type"], r["member_count"])
                for r in read_view(self.root, GROUPS).to_pylist()]

    def members(self) -> list[tuple[Any, ...]]:
        """(member, epoch, subscribed topics) of each member the tables show."""
        return [(r["member_id"], r["generation"], r["subscribed_topics"])
                for r in read_view(self.root, MEMBERS).to_pylist()]

    def owned(self) -> dict[str, list[tuple[str, int]]]:
        """What each member owns, by member."""
        owned: dict[str, list[tuple[str, int]]] = {}
        for r in read_view(self.root, ASSIGNMENTS).to_pylist():
            owned.setdefault(r["member_id"], []).append((r["topic"], r["partition"]))
        return owned


@pytest.fixture
def tables(root: StateRoot, monkeypatch: pytest.MonkeyPatch) -> ConsumerGroupTables:
    """The catalog holds the core context's topics under the same ids, so the tables can name them."""
    ids = iter([topic_id for topic_id, _ in TOPICS.values()])
    with monkeypatch.context() as patch:
        patch.setattr(catalog, "new_topic_id", lambda: next(ids))
        for name, (_, partitions) in TOPICS.items():
            TopicCatalog(root).create(name, partitions)
    assert TopicCatalog(root).topic_ids() == {name: topic_id for name, (topic_id, _) in TOPICS.items()}
    return ConsumerGroupTables(root)


def test_a_consumer_group_is_written_as_it_stands_through_a_revocation(tables: ConsumerGroupTables) -> None:
    ctx = tables.ctx
    a = ctx.join("a")
    tables.materialize()
    assert tables.groups() == [("g", a.member_epoch, "Stable", "consumer", 1)]
    assert tables.members() == [("a", a.member_epoch, ["t"])]
    assert tables.owned() == {"a": [("t", p) for p in range(4)]}

    b = ctx.join("b")
    tables.materialize()  # a still owns what moves to b until it says it released it
    group = ctx.coordinator.consumer_group("g")
    assert group is not None
    assert tables.groups() == [("g", group.group_epoch, "Reconciling", "consumer", 2)]
    assert tables.owned() == {"a": [("t", p) for p in range(4)]}

    revoked = ctx.beat("a", a.member_epoch, {T: range(4)})
    ctx.beat("a", revoked.member_epoch, {T: [0, 1]})
    granted = ctx.beat("b", b.member_epoch, {})
    ctx.beat("b", granted.member_epoch, {T: [2, 3]})
    tables.materialize()
    assert tables.groups() == [("g", group.group_epoch, "Stable", "consumer", 2)]
    assert tables.owned() == {"a": [("t", 0), ("t", 1)], "b": [("t", 2), ("t", 3)]}
    assert {member for member, _, _ in tables.members()} == {"a", "b"}


def test_members_leaving_empty_the_group_and_a_rebuild_writes_the_same(tables: ConsumerGroupTables,
                                                                        root: StateRoot) -> None:
    ctx = tables.ctx
    a = ctx.join("a")
    b = ctx.join("b", "t", "u")
    tables.materialize()
    ctx.leave("a", -1)
    tables.materialize()
    assert [member for member, _, _ in tables.members()] == ["b"]
    ctx.leave("b", -1)
    tables.materialize()
    group = ctx.coordinator.consumer_group("g")
    assert group is not None and a.member_epoch > 0 and b.member_epoch > 0
    assert tables.groups() == [("g", group.group_epoch, "Empty", "consumer", 0)]
    assert tables.members() == [] and tables.owned() == {}

    back = ctx.join("c", "u")
    tables.materialize()
    before = (tables.groups(), tables.members(), tables.owned())
    assert before[2] == {"c": [("u", 0), ("u", 1)]}
    rebuilt = Materializer(root)
    rebuilt.rebuild([record for _, batch in batches_after(ctx.log, -1) for record in batch],
                    log_version=ctx.log.version(), epoch=2)
    assert (tables.groups(), tables.members(), tables.owned()) == before
    assert back.member_epoch == before[1][0][1]


def test_groups_describe_reads_a_consumer_group(tables: ConsumerGroupTables, root: StateRoot,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    ctx = tables.ctx
    joined = ctx.join("a", "t", "u", instance_id="instance-a")
    tables.materialize()
    capsys.readouterr()
    assert main(["groups", "describe", "--group", "g", "--members", "--verbose", "--state-root", str(root.path)]) == 0
    header, row = capsys.readouterr().out.strip().splitlines()
    assert header.split() == ["GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
                              "ASSIGNMENT"]
    assert row.split()[:3] == ["g", "a", "instance-a"] and row.split()[-2:] == ["6", "t(0,1,2,3),u(0,1)"]
    assert main(["groups", "describe", "--group", "g", "--state", "--verbose", "--state-root", str(root.path)]) == 0
    header, row = capsys.readouterr().out.strip().splitlines()
    assert row.split()[0] == "g" and row.split()[-3:] == ["Stable", "1", str(joined.member_epoch)]


def test_an_unknown_topic_id_is_named_by_its_id(root: StateRoot) -> None:
    """Without the topics in the catalog (a root whose catalog lost them), the tables still show what is owned."""
    tables = ConsumerGroupTables(root)
    tables.ctx.join("a")
    tables.materialize()
    assert tables.owned() == {"a": [(str(T), p) for p in range(4)]}

