"""``spark.readStream.format("groupcoord")``: a Structured Streaming source that reads as a consumer-group member.

Spark runs a Python data source's driver-side methods (``initialOffset``, ``latestOffset``, ``partitions``,
``commit``) in one Python worker per query, and ``read`` in executors' workers. So:

- **The member** (:class:`~groupcoord.source.query_member.QueryMember`) lives in the driver-side worker,
  created at the first ``latestOffset``, and leaves the group when the query ends: Spark terminates the worker with
  SIGTERM (pyspark 4.2 does not call ``stop()`` then), and the source leaves before it goes.
- **latestOffset(start, limit)** runs between micro-batches, after the batch ending at ``start`` has finished:
  it commits ``start``'s positions of the partitions still owned from the acquisition they were read in, then polls
  the member (a cooperative rebalance releases revoked partitions here, never mid-batch), and plans the next end
  offset: continuing partitions from ``start``, newly acquired ones from max(committed offset, ``start``'s stale
  position) or ``startingOffsets`` when nothing is committed, up to the log end (or the AvailableNow target), under
  ``maxOffsetsPerTrigger``. With no record to read it returns ``start`` itself, so no empty batch is planned.
- **partitions(start, end)** depends on the two offsets alone (:func:`~groupcoord.source.offset.
  batch_ranges`), so a batch Spark replays after a crash reads exactly the same records.
- **reportLatestOffset()** reports the log ends the last plan saw and the group's lag at that batch's end, which
  Spark shows in each query's progress (:mod:`~groupcoord.source.progress`).
- **commit(end)** commits ``end``'s positions of the partitions still owned from the same acquisition; a late call
  about partitions that have moved since commits nothing for them.
- **AvailableNow**: the target is the log-end offsets recorded when the query starts, for every partition of the
  subscribed topics, so partitions acquired mid-run are read up to them too. A query whose own partitions are done
  waits while partitions it recorded are owned elsewhere and committed below its target (their owner is still
  reading, or about to leave), then finishes and leaves the group.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import FrameType
from typing import Any

import pyarrow as pa
from kafka.structs import TopicPartition
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from groupcoord.source.log_view import LogView, open_log_view
from groupcoord.source.offset import Position, SourceOffset, batch_ranges
from groupcoord.source.options import SourceOptions, parse_source_options
from groupcoord.source.planning import admit, split_ranges
from groupcoord.source.progress import lag_report
from groupcoord.source.query_member import QueryMember
from groupcoord.source.records import DataLossError, RangeRead, kafka_source_schema, read_range
from groupcoord.topics import PartitionOffsets

log = logging.getLogger("groupcoord.source.data_source")

SOURCE_NAME = "groupcoord"
POLL_TIMEOUT_MS = 1000
AVAILABLE_NOW_WAIT_S = 0.5
"""How often an AvailableNow query whose own partitions are done looks again at the partitions owned elsewhere."""
SIGTERM_LEAVE_TIMEOUT_S = 5.0
"""How long a worker Spark terminates may spend leaving the group."""
SPARK_SOURCE_WORKER = "pyspark.sql.streaming.python_streaming_source_runner"
"""The main module of the Python worker in which Spark runs a source's driver-side methods."""


class OffsetRange(InputPartition):
    """One Spark task's records: ``[low, high)`` of ``topic``-``partition``."""

    def __init__(self, topic: str, partition: int, low: int, high: int) -> None:
        super().__init__((topic, partition, low, high))
        self.topic, self.partition, self.low, self.high = topic, partition, low, high


class GroupcoordSource(DataSource):
    """The ``groupcoord`` data source. ``register()`` registers a subclass carrying the session's defaults."""

    session_defaults: Mapping[str, str] = {}
    """The session's ``spark.groupcoord.*`` conf when ``register()`` ran: the registry keys' defaults."""

    def __init__(self, options: Mapping[str, str]) -> None:
        super().__init__(dict(options))
        self.source_options = parse_source_options(options, self.session_defaults)

    @classmethod
    def name(cls) -> str:
        """``groupcoord``."""
        return SOURCE_NAME

    def schema(self) -> StructType:
        """Spark's Kafka source schema."""
        return kafka_source_schema(self.source_options.include_headers)

    def streamReader(self, schema: StructType) -> GroupcoordStreamReader:
        """The stream reader (cheap: the member starts at the first ``latestOffset``)."""
        return GroupcoordStreamReader(self.source_options)


class GroupcoordStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The driver side and the executor side of the source (see the module docstring)."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self.range_read = RangeRead(include_headers=options.include_headers,
                                    fail_on_data_loss=options.fail_on_data_loss, state_root=options.state_root,
                                    bootstrap_servers=options.bootstrap_servers,
                                    kafka_settings=dict(options.kafka_settings),
                                    poll_timeout_ms=options.poll_timeout_ms, storage=options.storage)
        self._member: QueryMember | None = None
        self._log_view: LogView | None = None
        self._targets: dict[TopicPartition, PartitionOffsets] | None = None
        self._latest: dict[TopicPartition, int] = {}
        self._lag: dict[str, Any] | None = None
        self._previous_sigterm: Callable[[int, FrameType | None], Any] | int | None = None

    def __getstate__(self) -> dict[str, Any]:
        """Only the options travel to the executors (the driver-side member and clients stay)."""
        return {"options": self.options, "range_read": self.range_read, "_member": None, "_log_view": None,
                "_targets": None, "_latest": {}, "_lag": None, "_previous_sigterm": None}

    # --- the driver side ---------------------------------------------------------------------------------------
    def initialOffset(self) -> dict[str, Any]:
        """No partition yet: every partition enters the query as acquired, with its starting point in the offset."""
        return SourceOffset(self.options.group_id).to_dict()

    def getDefaultReadLimit(self) -> ReadLimit:
        """``maxOffsetsPerTrigger``, else everything available."""
        limit = self.options.max_offsets_per_trigger
        return ReadMaxRows(limit) if limit is not None else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        """Record the log-end offsets of every partition of the subscribed topics: the run's target."""
        view = self._view()
        view.sync_catalog(self.options.subscribes)
        counts = view.partition_counts(self.options.subscribes)
        self._targets = view.bounds([TopicPartition(t, p) for t, n in counts.items() for p in range(n)])
        log.info("group %s: AvailableNow target recorded for %d partition(s)", self.options.group_id,
                 len(self._targets))

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        """Commit ``start``, rebalance, and plan the next end offset (see the module docstring)."""
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

    def reportLatestOffset(self) -> dict[str, Any] | None:
        """The log ends of the last plan and the group's lag at its batch's end, for the query's progress
        (:mod:`~groupcoord.source.progress`); ``None`` before the first plan."""
        return self._lag

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        """The batch's offset ranges, from ``start`` and ``end`` alone, cut for ``minPartitions``."""
        ranges = batch_ranges(SourceOffset.from_dict(start), SourceOffset.from_dict(end))
        pieces = split_ranges(ranges, min_partitions=self.options.min_partitions,
                              max_records=self.options.max_records_per_partition)
        return [OffsetRange(tp.topic, tp.partition, low, high) for tp, low, high in pieces]

    def commit(self, end: dict[str, Any]) -> None:
        """Spark finished the batches up to ``end``: commit the positions still owned from the same acquisition."""
        self._commit(SourceOffset.from_dict(end))

    def stop(self) -> None:
        """The query ended: leave the group, so that its partitions move on at once."""
        if self._previous_sigterm is not None and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self._previous_sigterm)
            self._previous_sigterm = None
        if self._member is not None:
            member, self._member = self._member, None
            member.close()
            log.info("group %s: the query's member left the group", self.options.group_id)
        if self._log_view is not None:
            view, self._log_view = self._log_view, None
            view.close()

    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions the query's member owns now (none before the first ``latestOffset``)."""
        return self._member.member.assignment() if self._member is not None else frozenset()

    # --- the executor side -------------------------------------------------------------------------------------
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The records of one :class:`OffsetRange`, as Arrow batches."""
        assert isinstance(partition, OffsetRange)
        return read_range(self.range_read, partition.topic, partition.partition, partition.low, partition.high)

    # --- planning ----------------------------------------------------------------------------------------------
    def _query_member(self) -> QueryMember:
        if self._member is None:
            self._member = QueryMember(self.options)
            self._leave_on_sigterm()
        return self._member

    def _leave_on_sigterm(self) -> None:
        """In Spark's driver-side worker, leave the group when Spark terminates the worker.

        pyspark 4.2 ends that worker with SIGTERM (twice, at once) when the query stops or finishes, without calling
        ``stop()``, and does not follow with SIGKILL. The handler leaves from a thread (the main thread may be inside
        the member when the signal lands), waits for it up to :data:`SIGTERM_LEAVE_TIMEOUT_S`, then lets the
        signal do what it did before. Elsewhere (a reader driven by a test or another program) the process's SIGTERM
        is left alone.
        """
        spec = getattr(sys.modules.get("__main__"), "__spec__", None)
        in_spark_worker = getattr(spec, "name", None) == SPARK_SOURCE_WORKER
        if not in_spark_worker or threading.current_thread() is not threading.main_thread():
            return
        previous = signal.getsignal(signal.SIGTERM)
        leaving: list[threading.Thread] = []

        def leave_then_terminate(signum: int, frame: FrameType | None) -> None:
            if not leaving:  # Spark sends SIGTERM twice: the second handler call waits for the same leave
                leaving.append(threading.Thread(target=self._leave_quietly, daemon=True,
                                                name="groupcoord-source-leave"))
                leaving[0].start()
            leaving[0].join(SIGTERM_LEAVE_TIMEOUT_S)
            if callable(previous):
                previous(signum, frame)
            elif previous != signal.SIG_IGN:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                os.kill(os.getpid(), signal.SIGTERM)

        self._previous_sigterm = previous if previous is not None else signal.SIG_DFL
        signal.signal(signal.SIGTERM, leave_then_terminate)

    def _leave_quietly(self) -> None:
        try:
            self.stop()
        except Exception:  # the worker is going anyway; the session timeout bounds what a failed leave leaves
            log.exception("group %s: the query's member could not leave the group", self.options.group_id)

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
        self._lag = lag_report(self.options.group_id, self._latest,
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
