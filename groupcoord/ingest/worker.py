"""The per-member work loop of the ingestion job: read a bounded batch, append it to the sink, commit the offsets.

:class:`IngestWork` is the picklable ``work(member, assignment) -> bool`` that
:func:`groupcoord.spark.members.run_members` calls in a loop inside each executor task (it can also be driven by
hand, as the tests do). Each call is one step of :class:`MemberIngest`:

1. partitions newly assigned start at ``max(committed offset, sink transaction version)``; when the sink is ahead
   (a crash came between the sink commit and the offset commit) its version is committed first; with neither, the
   start follows ``auto.offset.reset``, as it does for a position that retention removed;
2. up to ``max.records.per.batch`` records per owned partition (up to the log end seen) are read with the
   ``groupcoord`` source's reader (:class:`~groupcoord.source.records.RangeReader`) and written in one Delta commit
   with one app transaction per partition by the ``groupcoord-delta`` sink's writer
   (:func:`~groupcoord.sink.commit.append_batch`): rows the table already holds are dropped, and a concurrent commit
   of the same partitions (another member, a query) makes it plan again from the table's new versions. Then the
   versions the table reached are committed to the group in the member's generation.

The writer refuses a batch that starts past a partition's version (a gap) unless the start is one this member chose:
the group's committed offset when it is ahead of the table (``groupcoord groups reset-offsets``), or a position reset
by ``auto.offset.reset``.

A batch is finished (appended and committed) before the call returns, so when the next ``poll`` revokes partitions
nothing is in flight: the revoke hand-over needs no extra commit. A commit refused because the group rebalanced is
retried at the next step for the partitions still owned; for the others the sink's version is what the next owner
starts from, so nothing is lost or written twice either way.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kafka.structs import TopicPartition

from groupcoord.ingest.config import SINK_SCHEMA, OffsetReset
from groupcoord.ingest.sources import SourceSpec
from groupcoord.ingest.stop import StopMarker
from groupcoord.member import CommitFailedError, GroupMember
from groupcoord.member.errors import CoordinatorRequestError, CoordinatorUnavailableError
from groupcoord.sink.commit import SinkConflictError, append_batch, ensure_table
from groupcoord.sink.plan import BatchRange, TopicPartitionKey
from groupcoord.sink.table import SinkTable
from groupcoord.source.log_view import LogView
from groupcoord.source.records import RangeReader
from groupcoord.topics import PartitionOffsets

log = logging.getLogger("groupcoord.ingest.worker")

Targets = Mapping[tuple[str, int], int]
"""End offsets per ``(topic, partition)`` for ``--available-now``."""


@dataclass(frozen=True, kw_only=True)
class LeaveAfter:
    """Demo: the member whose instance id ends in ``-<member_index>`` leaves after ingesting ``records``."""

    member_index: int
    records: int


@dataclass(frozen=True, kw_only=True)
class IngestPlan:
    """Everything a member task needs, built on the driver (small and picklable)."""

    group_id: str
    source: SourceSpec
    sink: str
    sink_storage: Mapping[str, str] = field(default_factory=dict)
    """The sink's ``storage.*`` settings when it is on S3 (never secret values)."""
    max_records_per_batch: int = 10000
    auto_offset_reset: OffsetReset = "earliest"
    targets: Targets | None = None
    stop: StopMarker | None = None
    leave_after: LeaveAfter | None = None
    idle_ms: int = 100
    done_check_ms: int = 300


class IngestWork:
    """``work(member, assignment) -> bool``: one ingestion step per call; ``False`` means "leave the group".

    Picklable: only the plan travels; the per-member state is built lazily on the executor.
    """

    def __init__(self, plan: IngestPlan) -> None:
        self.plan = plan
        self._state: MemberIngest | None = None

    def __call__(self, member: GroupMember, assignment: Any) -> bool:
        if self._state is None or self._state.member is not member:
            if self._state is not None:
                self._state.close()
            self._state = MemberIngest(self.plan, member)
        keep_going = self._state.step(frozenset(assignment))
        if not keep_going:
            self._state.close()
        return keep_going

    @property
    def state(self) -> MemberIngest | None:
        """The current member's ingestion state (``None`` before the first call)."""
        return self._state

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_state": None}


class MemberIngest:
    """The ingestion state of one member: its positions, uncommitted offsets and counters."""

    def __init__(self, plan: IngestPlan, member: GroupMember, *, reader: RangeReader | None = None,
                 view: LogView | None = None) -> None:
        self.plan = plan
        self.member = member
        self.sink = SinkTable(plan.sink, plan.group_id, plan.sink_storage)
        ensure_table(self.sink.location, SINK_SCHEMA)  # the driver made it; a member driven by hand may be first
        self._reader = reader or RangeReader(plan.source.range_read())
        self._view = view or plan.source.log_view()
        self.positions: dict[TopicPartition, int] = {}
        self.uncommitted: dict[TopicPartition, int] = {}
        self.records = 0
        self.batches = 0
        self.conflicts = 0
        self.rebalances = 0
        self._bounds: dict[TopicPartition, PartitionOffsets] = {}
        self._jumps: dict[TopicPartitionKey, int] = {}
        self._generation = -1
        self._next_stop_check = 0.0
        self._next_done_check = 0.0
        self._closed = False

    # --- one step -----------------------------------------------------------------------------------------------
    def step(self, assignment: frozenset[TopicPartition]) -> bool:
        """Follow the assignment, then ingest one batch; ``False`` when this member should leave the group."""
        if self._stop_requested():
            log.info("group %s: stop requested; committing and leaving", self.plan.group_id)
            return self._finish()
        self._follow(assignment)
        self._commit_uncommitted()
        active = {tp: pos for tp, pos in self.positions.items() if not self._done(tp, pos)}
        if not active:
            if self.plan.targets is not None and self._group_done():
                return self._finish()
            time.sleep(self.plan.idle_ms / 1000)
            return True
        written = self._ingest(active)
        if self._leave_now():
            log.info("group %s: member %s leaves after %d records (demo)", self.plan.group_id,
                     self.member.config.group_instance_id, self.records)
            return self._finish()
        if not written:
            time.sleep(self.plan.idle_ms / 1000)
        return True

    def _follow(self, assignment: frozenset[TopicPartition]) -> None:
        generation = self.member.generation.generation_id
        if generation != self._generation:
            if self._generation >= 0:
                self.rebalances += 1
            log.info("group %s: member %s in generation %d owns %d partition(s)", self.plan.group_id,
                     self.member.member_id, generation, len(assignment))
            self._generation = generation
        for tp in set(self.positions) - assignment:
            self.positions.pop(tp)
            self.uncommitted.pop(tp, None)
            self._jumps.pop((tp.topic, tp.partition), None)
        added = assignment - set(self.positions)
        if added:
            self._start(frozenset(added))

    def _start(self, added: frozenset[TopicPartition]) -> None:
        """Start positions of newly owned partitions (see the module docstring)."""
        committed = self.member.committed(added)
        held = self.sink.versions(added)
        bounds = self._view.bounds(sorted(added))
        self._bounds.update(bounds)
        sink_first: dict[TopicPartition, int] = {}
        for tp in added:
            meta = committed.get(tp)
            offset = meta.offset if meta is not None and meta.offset >= 0 else None
            version = held[tp]
            known = [v for v in (offset, version) if v is not None]
            start = max(known) if known else self._reset(bounds[tp])
            if not bounds[tp].start <= start <= bounds[tp].end:
                start = self._reset(bounds[tp])
            if version is not None and start > version:
                self._jumps[(tp.topic, tp.partition)] = start
            if version is not None and (offset is None or version > offset):
                sink_first[tp] = version
            self.positions[tp] = start
            log.info("group %s: %s-%d starts at %d (committed %s, sink %s)", self.plan.group_id, tp.topic,
                     tp.partition, start, offset, version)
        if sink_first:
            self._commit(sink_first)

    def _reset(self, bounds: PartitionOffsets) -> int:
        return bounds.start if self.plan.auto_offset_reset == "earliest" else bounds.end

    def _done(self, tp: TopicPartition, position: int) -> bool:
        targets = self.plan.targets
        return targets is not None and position >= targets.get((tp.topic, tp.partition), 0)

    # --- ingesting ----------------------------------------------------------------------------------------------
    def _ranges(self, active: Mapping[TopicPartition, int]) -> dict[TopicPartitionKey, BatchRange]:
        """This step's batch: up to ``max_records_per_batch`` of each partition, up to the log end (or the target).
        Bounds are looked up again only for the partitions that reached the end last seen."""
        stale = sorted(tp for tp, position in active.items()
                       if tp not in self._bounds or position >= self._bounds[tp].end)
        if stale:
            self._bounds.update(self._view.bounds(stale))
        ranges = {}
        for tp, position in active.items():
            bounds = self._bounds[tp]
            if not bounds.start <= position <= bounds.end:
                if tp not in stale:  # the log start moved past it since the bounds were read
                    bounds = self._bounds[tp] = self._view.bounds([tp])[tp]
                if not bounds.start <= position <= bounds.end:
                    reset = self._reset(bounds)
                    log.warning("group %s: offset %d of %s-%d is out of the log's range [%d, %d]; resetting to %d "
                                "(%s)", self.plan.group_id, position, tp.topic, tp.partition, bounds.start,
                                bounds.end, reset, self.plan.auto_offset_reset)
                    position = self.positions[tp] = reset
                    self._jumps[(tp.topic, tp.partition)] = reset
            high = min(bounds.end, position + self.plan.max_records_per_batch)
            if self.plan.targets is not None:
                high = min(high, self.plan.targets.get((tp.topic, tp.partition), 0))
            if high > position:
                ranges[(tp.topic, tp.partition)] = BatchRange(position, high)
        return ranges

    def _ingest(self, active: Mapping[TopicPartition, int]) -> bool:
        ranges = self._ranges(active)
        if not ranges:
            return False
        batches = [batch for (topic, partition), span in ranges.items()
                   for batch in self._reader.read(topic, partition, span.start, span.end)]
        try:
            done = append_batch(self.sink.location, self.plan.group_id, ranges, batches,
                                resets=lambda: dict(self._jumps), reader=self.member.member_id,
                                table=self.sink.table())
        except SinkConflictError as exc:
            log.info("group %s: %s; reading again from the sink's versions", self.plan.group_id, exc)
            self.conflicts += 1
            tps = [TopicPartition(*key) for key in ranges]
            for tp, version in self.sink.versions(tps).items():
                if version is not None:
                    self.positions[tp] = max(version, self.positions[tp])
            return False
        if done.attempts > 1:
            self.conflicts += done.attempts - 1
        if done.table_version is not None:
            self.batches += 1
            self.records += done.rows
        reached = {}
        for key in ranges:
            tp = TopicPartition(*key)
            self.positions[tp] = reached[tp] = done.versions.get(key, ranges[key].end)
            self._jumps.pop(key, None)
        self._commit(reached)
        return True

    # --- committing ---------------------------------------------------------------------------------------------
    def _commit(self, offsets: Mapping[TopicPartition, int]) -> bool:
        offsets = dict(offsets)  # the caller may pass self.uncommitted itself, which this method changes
        try:
            self.member.commit_sync(offsets)
        except (CommitFailedError, CoordinatorUnavailableError, CoordinatorRequestError) as exc:
            log.info("group %s: offset commit deferred: %s", self.plan.group_id, exc)
            self.uncommitted.update(offsets)
            return False
        for tp in offsets:
            self.uncommitted.pop(tp, None)
        return True

    def _commit_uncommitted(self) -> None:
        pending = {tp: o for tp, o in self.uncommitted.items() if tp in self.positions}
        self.uncommitted = pending
        if pending:
            self._commit(pending)

    def _finish(self) -> bool:
        """Commit what is still uncommitted; the caller then leaves the group."""
        self._commit_uncommitted()
        return False

    # --- when to stop -------------------------------------------------------------------------------------------
    def _stop_requested(self) -> bool:
        stop = self.plan.stop
        if stop is None or time.monotonic() < self._next_stop_check:
            return False
        self._next_stop_check = time.monotonic() + 0.25
        return stop.requested()

    def _group_done(self) -> bool:
        """Available-now: every target partition's committed offset reached its target (any member's work)."""
        targets = self.plan.targets
        assert targets is not None
        if self.uncommitted or time.monotonic() < self._next_done_check:
            return False
        self._next_done_check = time.monotonic() + self.plan.done_check_ms / 1000
        wanted = {TopicPartition(t, p): end for (t, p), end in targets.items() if end > 0}
        if not wanted:
            return True
        committed = self.member.committed(wanted)
        return all((meta := committed.get(tp)) is not None and meta.offset >= end for tp, end in wanted.items())

    def _leave_now(self) -> bool:
        leave = self.plan.leave_after
        if leave is None or self.records < leave.records:
            return False
        instance = self.member.config.group_instance_id or ""
        return instance.rsplit("-", 1)[-1] == str(leave.member_index)

    def close(self) -> None:
        """Release the source's reader and log view."""
        if not self._closed:
            self._closed = True
            self._reader.close()
            self._view.close()
