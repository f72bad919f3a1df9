"""A new lease holder rebuilds the state tables from the loaded Delta record log, keeping the history."""

from __future__ import annotations

from collections import Counter

from deltalake import DeltaTable

from groupcoord.log.delta import DeltaRecordLog
from groupcoord.state.materializer import Materializer
from groupcoord.state.schema import ASSIGNMENTS, GROUPS, MEMBERS, OFFSETS
from groupcoord.state.views import read_rows, read_view
from groupcoord.state_root import StateRoot

from .scenario import LoggedCoordinator, take_over


def first_holder(root: StateRoot) -> tuple[LoggedCoordinator, list[str]]:
    """Epoch 1 takes over the Delta log, materializes a Stable group and some commits, then keeps writing the log
    without materializing (it crashes before its next flush). Returns it and the members of ``g``."""
    record_log = DeltaRecordLog(root.log_path)
    record_log.takeover(1, expected_version=-1)
    holder = LoggedCoordinator(root, log=record_log)
    members, generation = holder.stable_group("g", 2)
    holder.commit("g", {("t", 0): 7}, generation=generation, member_id=members[0])
    holder.commit("solo", {("x", 0): 5})
    holder.materialize()
    second = holder.leave_and_rebalance("g", members[1], members[0])
    holder.delete_group("solo")
    holder.commit("g", {("t", 1): 9}, generation=second, member_id=members[0])
    return holder, members


def test_rebuild_shows_what_the_deposed_holder_never_materialized(root: StateRoot) -> None:
    old, _ = first_holder(root)
    assert [r["group_id"] for r in read_view(root, GROUPS).to_pylist()] == ["g"]
    assert read_view(root, MEMBERS).num_rows == 2  # still generation 1: the rest was never materialized

    new = take_over(root, epoch=2, start_ms=old.ctx.now)

    version = new.log.version()
    assert new.materializer.materialized_version == version
    [group] = read_view(root, GROUPS).to_pylist()
    assert (group["generation"], group["member_count"], group["log_version"], group["epoch"]) == (2, 1, version, 2)
    assert [r["member_id"] for r in read_view(root, MEMBERS).to_pylist()] == ["client-1"]
    assert [(r["generation"], r["partition"]) for r in read_view(root, ASSIGNMENTS).to_pylist()] == [
        (2, p) for p in range(4)]
    # solo was deleted after the last flush: the rebuild deletes it from the views; the offsets keep the
    # generation they were committed in
    assert [(r["group_id"], r["partition"], r["offset"], r["generation"])
            for r in read_view(root, OFFSETS).to_pylist()] == [("g", 0, 7, 1), ("g", 1, 9, 2)]


def test_rebuild_keeps_the_history_of_earlier_epochs(root: StateRoot) -> None:
    old, _ = first_holder(root)
    before = read_rows(root, ASSIGNMENTS).num_rows

    take_over(root, epoch=2, start_ms=old.ctx.now)

    epochs = Counter(r["epoch"] for r in read_rows(root, ASSIGNMENTS).to_pylist())
    assert epochs == {1: before, 2: 4}
    assert {r["generation"] for r in read_rows(root, MEMBERS).to_pylist() if r["epoch"] == 1} == {1}


def test_a_retried_rebuild_in_the_same_epoch_writes_nothing(root: StateRoot) -> None:
    old, _ = first_holder(root)
    take_over(root, epoch=2, start_ms=old.ctx.now)
    versions = {t: DeltaTable(str(root.state_table_path(t))).version() for t in ("offsets", "groups")}
    loaded = DeltaRecordLog(root.log_path).load()

    assert Materializer(root).rebuild(loaded.records, log_version=loaded.version, epoch=2) == 0
    assert {t: DeltaTable(str(root.state_table_path(t))).version() for t in ("offsets", "groups")} == versions


def test_after_a_rebuild_new_batches_apply_in_the_new_epoch_with_the_group_generation(root: StateRoot) -> None:
    old, members = first_holder(root)
    new = take_over(root, epoch=2, start_ms=old.ctx.now)
    rebuilt_at = new.log.version()

    new.commit("g", {("t", 2): 11}, generation=2, member_id=members[0])
    new.materialize()

    row = next(r for r in read_view(root, OFFSETS).to_pylist() if r["partition"] == 2)
    assert (row["offset"], row["generation"], row["epoch"], row["log_version"]) == (11, 2, 2, rebuilt_at + 1)
