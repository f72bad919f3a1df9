"""The per-member work loop driven by hand: real members on a real coordinator, the embedded log, a Delta sink.

Each member runs ``work(member, member.poll())`` in its own thread, as a Spark member task would.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
from kafka.structs import TopicPartition

from groupcoord.ingest.check import check_exactly_once, embedded_rows
from groupcoord.ingest.config import SINK_SCHEMA
from groupcoord.ingest.demo_data import create_demo_topic
from groupcoord.ingest.sources import SourceSpec
from groupcoord.ingest.worker import IngestPlan, IngestWork, MemberIngest
from groupcoord.member import GroupMember
from groupcoord.member.errors import CoordinatorUnavailableError
from groupcoord.sink.commit import append_batch, ensure_table
from groupcoord.sink.plan import BatchRange
from groupcoord.sink.table import SinkTable
from groupcoord.source.log_view import LogView
from groupcoord.topics import PartitionOffsets, TopicLog
from tests.member.conftest import (
    FAST_OPTIONS,
    HEARTBEAT_INTERVAL_MS,
    REBALANCE_TIMEOUT_MS,
    SESSION_TIMEOUT_MS,
    Coordinator,
    poll_until,
)

PARTITIONS = 6
RECORDS = 6000


class Killed(Exception):
    """The member task died (raised where a real task would be killed)."""


def plan_for(stack: Coordinator, sink: Path, **options: Any) -> IngestPlan:
    """An available-now plan over topic ``events`` of the coordinator's state root."""
    ends = TopicLog(stack.root, "events").end_offsets()
    settings: dict[str, Any] = {"max_records_per_batch": 400, "idle_ms": 20, "done_check_ms": 50,
                                "targets": {("events", p): end for p, end in ends.items()}, **options}
    return IngestPlan(group_id="ingest", source=SourceSpec(str(stack.root.path)), sink=str(sink), **settings)


def run_member(member: GroupMember, work: Callable[[GroupMember, Any], bool], errors: list[BaseException]) -> None:
    """The member task loop: poll, work, until work says leave; then close (LeaveGroup)."""
    try:
        while work(member, member.poll(timeout_ms=200)):
            pass
        member.close()
    except Killed:
        member._stop.set()  # the process is gone: no heartbeats, no LeaveGroup
    except BaseException as exc:
        errors.append(exc)


def run_all(works: list[tuple[GroupMember, Callable[[GroupMember, Any], bool]]], timeout_s: float = 60) -> None:
    """Run every member loop in its own thread until all finish."""
    errors: list[BaseException] = []
    threads = [threading.Thread(target=run_member, args=(m, w, errors), daemon=True) for m, w in works]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout_s)
    assert not any(t.is_alive() for t in threads), "a member loop did not finish"
    if errors:
        raise errors[0]


def assert_exactly_once_and_committed(stack: Coordinator, sink: Path, member: GroupMember) -> None:
    """The sink holds every record once, and the group's committed offsets equal the sink's transaction versions."""
    result = check_exactly_once(SinkTable(sink, "ingest").read_all(), embedded_rows(stack.root, ["events"]))
    assert result.ok, result.summary()
    assert result.found == RECORDS
    tps = [TopicPartition("events", p) for p in range(PARTITIONS)]
    committed = {tp: meta.offset if meta else None for tp, meta in member.committed(tps).items()}
    assert committed == SinkTable(sink, "ingest").versions(tps)
    assert set(committed.values()) == {RECORDS // PARTITIONS}


def test_three_members_ingest_every_record_once_and_leave_when_the_group_is_done(
        coordinator: Callable[..., Coordinator], members: Callable[..., GroupMember], tmp_path: Path) -> None:
    stack = coordinator({})
    create_demo_topic(stack.root, "events", partitions=PARTITIONS, records=RECORDS)
    plan = plan_for(stack, tmp_path / "sink")
    group = [members("ingest", topics=["events"], state_root=stack.root.path, group_instance_id=f"t-{i}")
             for i in range(3)]
    works = [IngestWork(plan) for _ in group]
    run_all(list(zip(group, works, strict=True)))
    assert sum(w.state.records for w in works if w.state) == RECORDS
    assert_exactly_once_and_committed(stack, tmp_path / "sink", members("ingest", topics=["events"],
                                                                        state_root=stack.root.path))


def test_a_member_leaving_mid_run_hands_its_partitions_over_without_loss_or_duplicates(
        coordinator: Callable[..., Coordinator], members: Callable[..., GroupMember], tmp_path: Path) -> None:
    from groupcoord.ingest.worker import LeaveAfter

    stack = coordinator({})
    create_demo_topic(stack.root, "events", partitions=PARTITIONS, records=RECORDS)
    plan = plan_for(stack, tmp_path / "sink", leave_after=LeaveAfter(member_index=0, records=800))
    group = [members("ingest", topics=["events"], state_root=stack.root.path, group_instance_id=f"t-{i}")
             for i in range(2)]
    poll_until(group, lambda: all(m.assignment() for m in group))  # both members own partitions first
    works = [IngestWork(plan) for _ in group]
    run_all(list(zip(group, works, strict=True)))
    leaver, stayer = (w.state for w in works)
    assert leaver is not None and stayer is not None
    assert 800 <= leaver.records < RECORDS
    assert stayer.rebalances >= 1
    assert_exactly_once_and_committed(stack, tmp_path / "sink", members("ingest", topics=["events"],
                                                                        state_root=stack.root.path))


class DiesAfterSinkCommit(MemberIngest):
    """Dies between its first sink append and the offset commit that should follow it."""

    def _commit(self, offsets: Any) -> bool:
        if self.batches >= 1:
            raise Killed()
        return super()._commit(offsets)


class DyingWork(IngestWork):
    """Work whose member state dies after its first sink commit."""

    def __call__(self, member: GroupMember, assignment: Any) -> bool:
        if self._state is None:
            self._state = DiesAfterSinkCommit(self.plan, member)
        return super().__call__(member, assignment)


def test_a_member_killed_between_sink_and_offset_commit_leaves_the_sink_ahead_and_the_next_owner_catches_up(
        coordinator: Callable[..., Coordinator], members: Callable[..., GroupMember], tmp_path: Path) -> None:
    stack = coordinator({})
    create_demo_topic(stack.root, "events", partitions=PARTITIONS, records=RECORDS)
    plan = plan_for(stack, tmp_path / "sink")
    victim = members("ingest", topics=["events"], state_root=stack.root.path, group_instance_id="t-0")
    run_all([(victim, DyingWork(plan))])
    sink = SinkTable(tmp_path / "sink", "ingest")
    ahead = {tp: v for tp, v in sink.versions(TopicPartition("events", p) for p in range(PARTITIONS)).items() if v}
    assert ahead, "the victim wrote one batch to the sink"
    assert all(meta is None for meta in victim.committed(ahead).values()), "but committed nothing"
    survivor = members("ingest", topics=["events"], state_root=stack.root.path, group_instance_id="t-1")
    run_all([(survivor, IngestWork(plan))])
    assert_exactly_once_and_committed(stack, tmp_path / "sink", members("ingest", topics=["events"],
                                                                        state_root=stack.root.path))


class CoordinatorAwayOnce(GroupMember):
    """A real member whose first offset commit meets a coordinator that is away (as while it fails over)."""

    def commit_sync(self, offsets: Any = None, *, timeout_ms: int | None = None) -> None:
        if not getattr(self, "away_once", False):
            self.away_once = True
            raise CoordinatorUnavailableError("the coordinator is failing over")
        super().commit_sync(offsets, timeout_ms=timeout_ms)


def test_a_deferred_offset_commit_is_retried_at_the_next_batch_and_lands(
        coordinator: Callable[..., Coordinator], members: Callable[..., GroupMember], tmp_path: Path) -> None:
    stack = coordinator({})
    create_demo_topic(stack.root, "events", partitions=PARTITIONS, records=RECORDS)
    member = CoordinatorAwayOnce("ingest", topics=["events"], state_root=stack.root.path, group_instance_id="t-0",
                                 session_timeout_ms=SESSION_TIMEOUT_MS, heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
                                 rebalance_timeout_ms=REBALANCE_TIMEOUT_MS, options=FAST_OPTIONS)
    work = IngestWork(plan_for(stack, tmp_path / "sink"))
    run_all([(member, work)])  # closes the member when the work is done
    assert member.away_once and work.state is not None and not work.state.uncommitted
    assert_exactly_once_and_committed(stack, tmp_path / "sink", members("ingest", topics=["events"],
                                                                        state_root=stack.root.path))


def test_progress_shows_lag_falling_to_zero_and_the_records_ingested(
        coordinator: Callable[..., Coordinator], members: Callable[..., GroupMember], tmp_path: Path) -> None:
    from groupcoord.ingest.catalog_sync import topic_filter
    from groupcoord.ingest.progress import ProgressMonitor

    stack = coordinator({})
    create_demo_topic(stack.root, "events", partitions=PARTITIONS, records=RECORDS)
    plan = plan_for(stack, tmp_path / "sink")
    monitor = ProgressMonitor(stack.root, plan.source, SinkTable(tmp_path / "sink", "ingest"), "ingest",
                              topic_filter(("events",), None), tty=False)
    before = monitor.sample()
    assert (before.ingested, before.lag, before.partitions) == (0, RECORDS, PARTITIONS)
    run_all([(members("ingest", topics=["events"], state_root=stack.root.path), IngestWork(plan))])
    after = monitor.sample()
    assert (after.ingested, after.lag) == (RECORDS, 0)
    assert after.records_per_s > 0
    assert f"ingested {RECORDS:,} records" in after.line() and "lag 0 over 6 partition(s)" in after.line()


class RetainedView:
    """The source's log view, but partition 0's log starts at ``start``, as if retention had removed the records
    before it (they are still readable, so a read that went there would show)."""

    def __init__(self, view: LogView, start: int) -> None:
        self.view = view
        self.start = start

    def bounds(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, PartitionOffsets]:
        """The real bounds, partition 0's start moved."""
        return {tp: PartitionOffsets(max(b.start, self.start), b.end) if tp.partition == 0 else b
                for tp, b in self.view.bounds(partitions).items()}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.view, name)


def test_a_member_goes_on_past_records_retention_removed_and_the_writer_allows_that_jump(
        coordinator: Callable[..., Coordinator], members: Callable[..., GroupMember], tmp_path: Path) -> None:
    """The table holds 0..9 of partition 0; the log now starts at 20. The member resets to the log start
    (``auto.offset.reset`` earliest) and the writer accepts the jump it chose: 10..19 are gone, nothing else is."""
    stack = coordinator({})
    create_demo_topic(stack.root, "events", partitions=PARTITIONS, records=RECORDS)
    plan = plan_for(stack, tmp_path / "sink")
    first = TopicLog(stack.root, "events").read(0, 0, 10)
    ensure_table(str(tmp_path / "sink"), SINK_SCHEMA)
    append_batch(str(tmp_path / "sink"), "ingest", {("events", 0): BatchRange(0, 10)},
                 first.append_column("topic", pa.array(["events"] * 10)).to_batches(), resets=dict)

    class RetainedWork(IngestWork):
        def __call__(self, member: GroupMember, assignment: Any) -> bool:
            if self._state is None:
                self._state = MemberIngest(self.plan, member, view=RetainedView(self.plan.source.log_view(), 20))
            return super().__call__(member, assignment)

    run_all([(members("ingest", topics=["events"], state_root=stack.root.path), RetainedWork(plan))])
    rows = SinkTable(tmp_path / "sink", "ingest").read_all(["partition", "offset"]).to_pylist()
    per_partition = RECORDS // PARTITIONS
    assert sorted(r["offset"] for r in rows if r["partition"] == 0) == [*range(10), *range(20, per_partition)]
    assert len(rows) == RECORDS - 10
    tps = [TopicPartition("events", p) for p in range(PARTITIONS)]
    assert set(SinkTable(tmp_path / "sink", "ingest").versions(tps).values()) == {per_partition}
