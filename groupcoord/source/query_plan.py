"""The driver side of a ``groupcoord`` query: its member, its view of the log, and the plan of each micro-batch.

:class:`QueryPlan` is what :class:`~groupcoord.source.data_source.GroupcoordStreamReader` hands its driver-side
methods to (see that module's docstring for what each one does). It lives in its own module so that the module
pyspark loads in every worker, the executors' too, stays import-light: this one brings in the member (and through
it the coordinator's wire client and the lease table), the log view (delta-rs, confluent-kafka) and kafka-python,
and only Spark's driver-side worker of the query imports it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kafka.structs import TopicPartition
from pyspark.sql.streaming.datasource import ReadLimit, ReadMaxRows

from groupcoord.source.log_view import LogView, open_log_view
from groupcoord.source.offset import Position, SourceOffset, batch_ranges
from groupcoord.source.options import SourceOptions
from groupcoord.source.planning import admit, split_ranges
from groupcoord.source.progress import lag_report
from groupcoord.source.query_member import QueryMember
from groupcoord.source.records import DataLossError
from groupcoord.topics import PartitionOffsets

log = logging.getLogger("groupcoord.source.query_plan")

POLL_TIMEOUT_MS = 1000
AVAILABLE_NOW_WAIT_S = 0.5
"""How often an AvailableNow query whose own partitions are done looks again at the partitions owned elsewhere."""


def input_ranges(options: SourceOptions, start: Mapping[str, Any],
                 end: Mapping[str, Any]) -> list[tuple[TopicPartition, int, int]]:
    """The batch's ``(partition, low, high)`` pieces, from ``start`` and ``end`` alone, cut for ``minPartitions``."""
    ranges = batch_ranges(SourceOffset.from_dict(start), SourceOffset.from_dict(end))
    return split_ranges(ranges, min_partitions=options.min_partitions,
                        max_records=options.max_records_per_partition)


class QueryPlan:
    """The query's member and log view, created when first needed, and the planning state between batches.

    ``on_member`` runs once, right after the member is created (the reader hooks Spark's SIGTERM there).
    """

    def __init__(self, options: SourceOptions, on_member: Callable[[], None] = lambda: None) -> None:
        self.options = options
        self._on_member = on_member
        self._member: QueryMember | None = None
        self._log_view: LogView | None = None
        self._targets: dict[TopicPartition, PartitionOffsets] | None = None
        self._latest: dict[TopicPartition, int] = {}
        self.lag: dict[str, Any] | None = None
        """The ``latestOffset`` document of the last plan (:mod:`~groupcoord.source.progress`); ``None`` before."""

    def initial_offset(self) -> dict[str, Any]:
        """The empty offset of the query's group."""
        return SourceOffset(self.options.group_id).to_dict()

    def prepare_available_now(self) -> None:
        """Record the log-end offsets of every partition of the subscribed topics: the run's target."""
        view = self._view()
        view.sync_catalog(self.options.subscribes)
        counts = view.partition_counts(self.options.subscribes)
        self._targets = view.bounds([TopicPartition(t, p) for t, n in counts.items() for p in range(n)])
        log.info("group %s: AvailableNow target recorded for %d partition(s)", self.options.group_id,
                 len(self._targets))

    def latest_offset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        """Commit ``start``, rebalance, and plan the next end offset; ``start`` itself when there is nothing to
        read."""
        previous = SourceOffset.from_dict(start)
        member = self._query_member()
        self._commit(previous)
        self._view().sync_catalog(self.options.subscribes)
        waited_since = time.monotonic()
        while True:
            acquired = member.poll(POLL_TIMEOUT_MS)
            end = self._plan(previous, acquired, limit)
            if batch_ranges(previous, end):
                return self._reported(end).to_dict()
            if self._targets is None or not self._others_behind(acquired):
                self._reported(end)  # nothing to read: where the member stands
                return start
            if time.monotonic() - waited_since > 30:
                log.info("group %s: AvailableNow: waiting for partitions owned by other members to reach the target",
                         self.options.group_id)
                waited_since = time.monotonic()
            time.sleep(AVAILABLE_NOW_WAIT_S)

    def commit(self, end: dict[str, Any]) -> None:
        """Commit ``end``'s positions of the partitions still owned from the same acquisition."""
        self._commit(SourceOffset.from_dict(end))

    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions the member owns now (none before it exists)."""
        return self._member.member.assignment() if self._member is not None else frozenset()

    def close(self) -> None:
        """Leave the group (when the member exists) and release the log view's clients."""
        if self._member is not None:
            member, self._member = self._member, None
            member.close()
            log.info("group %s: the query's member left the group", self.options.group_id)
        if self._log_view is not None:
            view, self._log_view = self._log_view, None
            view.close()

    def _query_member(self) -> QueryMember:
        if self._member is None:
            self._member = QueryMember(self.options)
            self._on_member()
        return self._member

    def _view(self) -> LogView:
        if self._log_view is None:
            self._log_view = open_log_view(self.options.open_root(), self.options.bootstrap_servers,
                                           self.options.kafka_settings,
                                           timeout_s=self.options.poll_timeout_ms / 1000)
        return self._log_view

    def _commit(self, offset: SourceOffset) -> None:
        member = self._member
        if member is None or offset.member_id != member.member_id:
            return
        member.commit({tp: p.next for tp, p in offset.positions.items() if member.owns(tp, p.acquired)})

    def _reported(self, offset: SourceOffset) -> SourceOffset:
        """``offset``, after keeping the lag its positions leave against the last plan's log ends."""
        self.lag = lag_report(self.options.group_id, self._latest,
                              {tp: p.next for tp, p in offset.positions.items() if tp in self._latest})
        return offset

    def _plan(self, previous: SourceOffset, acquired: Mapping[TopicPartition, int], limit: ReadLimit) -> SourceOffset:
        member = self._query_member()
        bounds = self._view().bounds(acquired)
        self._latest = {tp: b.end for tp, b in bounds.items()}
        continuing = {tp: p for tp in acquired
                      if (p := previous.continues(tp, member.member_id, acquired[tp])) is not None}
        fresh = sorted(tp for tp in acquired if tp not in continuing)
        starts = self._starting_points(fresh, previous, bounds)
        positions = {tp: p.next for tp, p in continuing.items()} | starts
        moved, lost = set(starts), set[TopicPartition]()
        for tp, position in list(positions.items()):
            skipped = self._skip_lost(tp, position, bounds[tp])
            if skipped != position:
                positions[tp], moved, lost = skipped, moved | {tp}, lost | {tp}
        ranges = {tp: (pos, max(pos, self._high(tp, bounds[tp]))) for tp, pos in positions.items()}
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        ends = admit(ranges, max_rows)
        return SourceOffset(self.options.group_id, member.member_id, member.generation_id, {
            tp: Position(ends[tp], acquired[tp], positions[tp] if tp in moved else None, tp in lost)
            for tp in sorted(acquired)})

    def _high(self, tp: TopicPartition, bounds: PartitionOffsets) -> int:
        if self._targets is None:
            return bounds.end
        target = self._targets.get(tp)
        return min(bounds.end, target.end) if target is not None else 0

    def _starting_points(self, fresh: Sequence[TopicPartition], previous: SourceOffset,
                         bounds: Mapping[TopicPartition, PartitionOffsets]) -> dict[TopicPartition, int]:
        """Where newly acquired partitions start: max(committed, the checkpoint's stale position), else
        ``startingOffsets``. The stale position counts only when nobody committed beyond it (this query's own
        restart, whose last batch may be newer than its last commit)."""
        if not fresh:
            return {}
        committed = self._query_member().committed(fresh)
        starts = {}
        for tp in fresh:
            stale = previous.positions.get(tp)
            known = [o for o in (committed.get(tp), stale.next if stale is not None else None) if o is not None]
            starts[tp] = max(known) if known else self._starting_offset(tp, bounds[tp])
        return starts

    def _starting_offset(self, tp: TopicPartition, bounds: PartitionOffsets) -> int:
        starting = self.options.starting
        if isinstance(starting, dict):
            chosen = starting.get(tp.topic, {}).get(tp.partition)
            if chosen is None:
                return bounds.end  # Spark's Kafka source: partitions the JSON leaves out start at latest
            return bounds.start if chosen == -2 else bounds.end if chosen == -1 else chosen
        return bounds.start if starting == "earliest" else bounds.end

    def _skip_lost(self, tp: TopicPartition, position: int, bounds: PartitionOffsets) -> int:
        """``position``, or where reading must go on when retention removed it (``failOnDataLoss`` false)."""
        if bounds.start <= position <= bounds.end:
            return position
        what = (f"offset {position} of {tp.topic}-{tp.partition} is out of the log's range [{bounds.start}, "
                f"{bounds.end}]")
        if self.options.fail_on_data_loss:
            raise DataLossError(f"{what}. Some data may have been lost because it is no longer available (retention, "
                                "or a deleted topic). If you want the query to go on, set failOnDataLoss to false.")
        log.warning("%s; going on from %d (failOnDataLoss is false)", what, bounds.start)
        return bounds.start

    def _others_behind(self, acquired: Mapping[TopicPartition, int]) -> bool:
        """AvailableNow: some recorded partition owned elsewhere is committed below this query's target."""
        assert self._targets is not None
        elsewhere = [tp for tp, target in self._targets.items() if tp not in acquired and target.end > target.start]
        if not elsewhere:
            return False
        committed = self._query_member().committed(elsewhere)
        targets = self._targets
        return any(_or(committed.get(tp), targets[tp].start) < targets[tp].end for tp in elsewhere)


def _or(value: int | None, default: int) -> int:
    return default if value is None else value
