"""The materializer: rows of every table, generations, deletions, one commit per table, idempotent retries, lag."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from groupcoord.coordinator.records import OffsetValue, chunks_of, new_offset_commit_record
from groupcoord.log.memory import InMemoryRecordLog
from groupcoord.protocol import ConsumerGroupHeartbeatRequest, MemberIdentity
from groupcoord.security.acls import AclBinding, Operation, PatternType, Permission, ResourceType
from groupcoord.state.materializer import CommittedBatch, Materializer, MaterializerConfig, run_materializer
from groupcoord.state.schema import ASSIGNMENTS, GROUPS, MEMBERS, OFFSETS, STATE_TABLES, TIMESTAMP
from groupcoord.state.views import read_rows, read_view
from groupcoord.state_root import StateRoot
from tests.narrowing import expect

from .scenario import LoggedCoordinator, at


def versions(root: StateRoot) -> dict[str, int]:
    """The Delta version of every existing state table."""
    return {name: DeltaTable(str(root.state_table_path(name))).version()
            for name in STATE_TABLES if DeltaTable.is_deltatable(str(root.state_table_path(name)))}


def test_offsets_carry_the_generation_they_were_committed_in_and_simple_commits_none(
        coordinator: LoggedCoordinator, root: StateRoot) -> None:
    members, generation = coordinator.stable_group("g", 2)
    coordinator.commit("g", {("t", 0): 10, ("t", 1): 11}, generation=generation, member_id=members[0])
    coordinator.commit("solo", {("x", 0): 5})
    coordinator.materialize()

    view = read_view(root, OFFSETS).to_pylist()
    assert [(r["group_id"], r["topic"], r["partition"], r["offset"], r["generation"], r["log_version"], r["epoch"])
            for r in view] == [("g", "t", 0, 10, 1, 1, 1), ("g", "t", 1, 11, 1, 1, 1), ("solo", "x", 0, 5, None, 2, 1)]
    assert all(r["commit_time"] == at(coordinator.ctx.now) for r in view)


def test_every_generation_stays_in_history_and_the_views_show_the_latest(
        coordinator: LoggedCoordinator, root: StateRoot) -> None:
    members, _ = coordinator.stable_group("g", 2)
    coordinator.materialize()
    generation = coordinator.leave_and_rebalance("g", members[1], members[0])
    coordinator.materialize()

    history = read_rows(root, ASSIGNMENTS).to_pylist()
    assert sorted((r["generation"], r["member_id"], r["partition"]) for r in history) == [
        (1, "client-1", 0), (1, "client-1", 2), (1, "client-2", 1), (1, "client-2", 3),
        (2, "client-1", 0), (2, "client-1", 1), (2, "client-1", 2), (2, "client-1", 3)]
    assert [(r["generation"], r["member_id"], r["partition"]) for r in read_view(root, ASSIGNMENTS).to_pylist()] == [
        (generation, "client-1", p) for p in range(4)]
    assert [(r["member_id"], r["subscribed_topics"]) for r in read_view(root, MEMBERS).to_pylist()] == [
        ("client-1", ["t"])]
    [group] = read_view(root, GROUPS).to_pylist()
    assert (group["generation"], group["state"], group["protocol_type"], group["protocol"], group["leader"],
            group["member_count"]) == (2, "Stable", "consumer", "range", "client-1", 1)


def test_a_group_left_by_everyone_is_empty_with_no_members_or_assignments(
        coordinator: LoggedCoordinator, root: StateRoot) -> None:
    members, _ = coordinator.stable_group("g", 2)
    coordinator.materialize()
    coordinator.ctx.leave("g", *(MemberIdentity(member_id=m) for m in members))
    coordinator.materialize()

    assert [(r["state"], r["member_count"]) for r in read_view(root, GROUPS).to_pylist()] == [("Empty", 0)]
    assert read_view(root, MEMBERS).num_rows == 0
    assert read_view(root, ASSIGNMENTS).num_rows == 0
    assert read_rows(root, MEMBERS).num_rows == 3  # two members of generation 1, the Empty generation's marker


def test_deleted_groups_and_offsets_leave_the_views_but_not_the_history(
        coordinator: LoggedCoordinator, root: StateRoot) -> None:
    coordinator.commit("solo", {("x", 0): 5, ("x", 1): 6})
    coordinator.materialize()
    coordinator.delete_group("solo")
    coordinator.materialize()

    assert read_view(root, OFFSETS).num_rows == 0
    assert read_view(root, GROUPS).num_rows == 0
    deleted = [r for r in read_rows(root, OFFSETS).to_pylist() if r["deleted"]]
    assert sorted((r["partition"], r["offset"]) for r in deleted) == [(0, None), (1, None)]
    assert [(r["state"], r["deleted"]) for r in read_rows(root, GROUPS).to_pylist()] == [("Dead", True)]


def test_several_log_batches_become_one_commit_per_table_and_one_offset_row_per_partition(
        coordinator: LoggedCoordinator, root: StateRoot) -> None:
    members, generation = coordinator.stable_group("g", 2)
    coordinator.commit("g", {("t", 1): 100}, generation=generation, member_id=members[1])
    for offset in range(5):
        coordinator.commit("g", {("t", 0): offset}, generation=generation, member_id=members[0])
    assert len(coordinator.pending()) == 7

    coordinator.materialize()

    assert versions(root) == {"offsets": 0, "groups": 0, "members": 0, "assignments": 0}
    assert coordinator.materializer.commits == 4
    # offset commits of one flush are coalesced to the last per partition, keeping its log version
    assert sorted((r["partition"], r["offset"], r["log_version"]) for r in read_rows(root, OFFSETS).to_pylist()) == [
        (0, 4, 6), (1, 100, 1)]


def test_typed_records_materialize_like_the_encoded_ones(
        coordinator: LoggedCoordinator, root: StateRoot, tmp_path: Path) -> None:
    members, generation = coordinator.stable_group("g", 2)
    coordinator.commit("g", {("t", 0): 1}, generation=generation, member_id=members[0])
    coordinator.ctx.leave("g", *(MemberIdentity(member_id=m) for m in members))
    coordinator.delete_group("g")
    coordinator.materialize()
    typed = [CommittedBatch(records=chunks_of(result.records), log_version=version, epoch=1,
                            committed_at=at(coordinator.ctx.now))
             for version, result in enumerate(r for r in coordinator.ctx.results if r.records)]
    other = StateRoot.open(tmp_path / "typed", create=True)

    Materializer(other).apply_batches(typed)

    for table in STATE_TABLES.values():
        assert sorted(map(repr, read_rows(other, table).to_pylist())) == sorted(
            map(repr, read_rows(root, table).to_pylist())), table.name


def test_reapplying_materialized_batches_writes_nothing(coordinator: LoggedCoordinator, root: StateRoot) -> None:
    members, generation = coordinator.stable_group("g", 2)
    coordinator.commit("g", {("t", 0): 3}, generation=generation, member_id=members[0])
    batches = coordinator.pending()
    coordinator.materialize()
    before = versions(root)

    again = Materializer(root)  # a retry after a crash: the watermark comes from the tables themselves
    assert again.apply_batches(batches) == 0
    assert coordinator.materializer.apply_batches(batches[-1:]) == 0

    assert versions(root) == before
    assert again.materialized_version == batches[-1].log_version


def test_a_flush_that_failed_half_way_is_completed_by_its_retry_without_duplicates(
        coordinator: LoggedCoordinator, root: StateRoot) -> None:
    coordinator.stable_group("g", 2)
    blocker = root.state_table_path("assignments").local_path
    blocker.parent.mkdir(parents=True, exist_ok=True)
    blocker.write_text("not a table")  # storage failure for the last table written
    materializer = coordinator.materializer
    for batch in coordinator.pending():
        materializer.submit(batch)

    with pytest.raises(OSError):
        materializer.flush()
    assert materializer.lag().pending_batches == 1
    blocker.unlink()
    materializer.flush()

    assert materializer.lag().pending_batches == 0
    assert versions(root) == {"groups": 0, "members": 0, "assignments": 0}  # one commit each, none repeated
    for table in (GROUPS, MEMBERS, ASSIGNMENTS):
        assert {r["log_version"] for r in read_rows(root, table).to_pylist()} == {0}
    assert read_rows(root, MEMBERS).num_rows == 2
    assert read_rows(root, ASSIGNMENTS).num_rows == 4


def test_lag_reports_pending_log_versions_and_their_age(coordinator: LoggedCoordinator) -> None:
    coordinator.stable_group("g", 2)
    [batch] = coordinator.pending()
    materializer = coordinator.materializer
    materializer.submit(batch)

    lag = materializer.lag(now=batch.committed_at + dt.timedelta(milliseconds=1500))
    assert (lag.log_version, lag.materialized_version, lag.pending_batches, lag.seconds) == (0, -1, 1, 1.5)
    assert "materialized log version -1 of 0" in str(lag)
    materializer.flush()
    assert materializer.lag() == dataclasses.replace(lag, materialized_version=0, pending_batches=0, seconds=0.0)


def test_snapshot_batches_count_as_materialized_without_rows(coordinator: LoggedCoordinator, root: StateRoot) -> None:
    coordinator.stable_group("g", 2)
    coordinator.materialize()
    snapshot = CommittedBatch(records=expect(coordinator.log, InMemoryRecordLog).batches[0], log_version=1, epoch=1,
                              committed_at=at(coordinator.ctx.now), snapshot=True)

    assert coordinator.materializer.apply_batches([snapshot]) == 0
    assert coordinator.materializer.materialized_version == 1
    assert versions(root) == {"groups": 0, "members": 0, "assignments": 0}


def test_run_materializer_flushes_submitted_batches_in_the_background(
        coordinator: LoggedCoordinator, root: StateRoot) -> None:
    coordinator.stable_group("g", 2)
    materializer = Materializer(root, config=MaterializerConfig(interval_ms=10))

    async def main() -> None:
        task = asyncio.create_task(run_materializer(materializer))
        for batch in coordinator.pending():
            materializer.submit(batch)
        for _ in range(500):
            if materializer.lag().pending_batches == 0:
                break
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert materializer.materialized_version == 0
    assert read_view(root, GROUPS).num_rows == 1


class _GatedExecutor(ThreadPoolExecutor):
    """Runs each job only once ``gate`` is set; ``scheduled`` tells that a job arrived, ``ran`` that one finished."""

    def __init__(self) -> None:
        super().__init__(1)
        self.scheduled, self.gate, self.ran = threading.Event(), threading.Event(), threading.Event()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        self.scheduled.set()

        def gated() -> Any:
            self.gate.wait()
            try:
                return fn(*args, **kwargs)
            finally:
                self.ran.set()

        return super().submit(gated)


def test_run_materializer_never_splits_the_batches_of_one_log_version(root: StateRoot) -> None:
    # As in the holder, every request of a commit submits its own batch with the commit's version, in one pass of
    # the loop. Here the flush thread runs in the middle of that pass: it must not take only the first batch, or the
    # second would look already written (rows at or below a table's highest version are skipped).
    materializer = Materializer(root, config=MaterializerConfig(interval_ms=10))
    executor = _GatedExecutor()
    first, second = (CommittedBatch(records=(new_offset_commit_record("g", "t", partition, OffsetValue(
        offset=5, leader_epoch=-1, metadata="", commit_timestamp_ms=1)),), log_version=3, epoch=1,
        committed_at=dt.datetime.now(dt.UTC)) for partition in (0, 1))

    async def main() -> None:
        task = asyncio.create_task(run_materializer(materializer, executor=executor))
        while not executor.scheduled.is_set():
            await asyncio.sleep(0.001)
        materializer.submit(first)  # the pass: no await until the second submit
        executor.gate.set()
        assert executor.ran.wait(10)
        materializer.submit(second)
        while materializer.lag().pending_batches:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    try:
        asyncio.run(main())
    finally:
        executor.shutdown()
    assert sorted(read_rows(root, OFFSETS).column("partition").to_pylist()) == [0, 1]


def test_tables_stay_on_delta_protocol_1_2_with_utc_timestamps(
        coordinator: LoggedCoordinator, root: StateRoot) -> None:
    coordinator.stable_group("g", 2)
    coordinator.commit("solo", {("x", 0): 1})
    coordinator.alter_acls(creations=(AclBinding(ResourceType.TOPIC, "x", PatternType.LITERAL, "User:a", "*",
                                                 Operation.READ, Permission.ALLOW),))
    coordinator.materialize()

    for name, table in STATE_TABLES.items():
        delta = DeltaTable(str(root.state_table_path(name)))
        protocol = delta.protocol()
        assert (protocol.min_reader_version, protocol.min_writer_version) == (1, 2), name
        assert delta.to_pyarrow_table().schema.names == table.schema.names
    assert read_rows(root, OFFSETS).schema.field("commit_time").type == TIMESTAMP
    assert TIMESTAMP.tz == "UTC"


def test_a_consumer_group_beside_a_classic_one_materializes_both(
        coordinator: LoggedCoordinator, root: StateRoot) -> None:
    """A consumer group's (KIP-848) member joins and waits for its first target assignment (this context's shell
    never computes one), so the group exists with its member and nothing owned; a classic group beside it
    materializes as before (tests/state/test_consumer_group_rows.py follows consumer groups further)."""
    coordinator.ctx.send(ConsumerGroupHeartbeatRequest(
        group_id="cg", member_id="m", member_epoch=0, rebalance_timeout_ms=1000, subscribed_topic_names=("t",),
        topic_partitions={}))
    coordinator.stable_group("g", 1)
    coordinator.materialize()
    groups = {r["group_id"]: (r["protocol_type"], r["member_count"]) for r in read_view(root, GROUPS).to_pylist()}
    assert groups["g"] == ("consumer", 1)
    members = {(r["group_id"], r["member_id"]) for r in read_view(root, MEMBERS).to_pylist()}
    assignments = {r["group_id"] for r in read_view(root, ASSIGNMENTS).to_pylist()}
    assert ("g", "client-1") in members and "g" in assignments and "cg" not in assignments
    assert ("cg" in groups) == (("cg", "m") in members), (groups, members)
