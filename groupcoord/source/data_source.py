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

The driver side's work is :class:`~groupcoord.source.query_plan.QueryPlan`'s, imported at the first driver-side call:
every Python worker of the query imports this module (to unpickle the source or the reader), and the executors' and
Spark's planner workers need neither the member nor the log view, nor kafka-python.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import FrameType
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow

from groupcoord.source.records import RangeRead, kafka_source_schema, read_range

if TYPE_CHECKING:
    import pyarrow as pa
    from kafka.structs import TopicPartition
    from pyspark.sql.types import StructType

    from groupcoord.source.options import SourceOptions
    from groupcoord.source.query_plan import QueryPlan

log = logging.getLogger("groupcoord.source.data_source")

SOURCE_NAME = "groupcoord"
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
        from groupcoord.source.options import parse_source_options

        super().__init__(dict(options))
        self._source_options: SourceOptions | None = parse_source_options(options, self.session_defaults)

    @property
    def source_options(self) -> SourceOptions:
        """The validated options (validated when the query is defined; parsed again in a worker that needs them)."""
        if self._source_options is None:
            from groupcoord.source.options import parse_source_options

            self._source_options = parse_source_options(self.options, self.session_defaults, warn=False)
        return self._source_options

    def __getstate__(self) -> dict[str, Any]:
        """The options as given, not as parsed: Spark pickles the source into every worker of the query, the
        executors' too (beside the reader), and the parsed options' member settings would import the member's
        packages there."""
        return {**self.__dict__, "_source_options": None}

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
    """The driver side and the executor side of the source (see the module docstring).

    Import-light: the driver side's work is :class:`~groupcoord.source.query_plan.QueryPlan`'s, imported at the
    first driver-side call, so an executor's worker, which unpickles this reader to call :meth:`read`, loads
    neither the member nor the log view.
    """

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self.range_read = RangeRead(include_headers=options.include_headers,
                                    fail_on_data_loss=options.fail_on_data_loss, state_root=options.state_root,
                                    bootstrap_servers=options.bootstrap_servers,
                                    kafka_settings=dict(options.kafka_settings),
                                    poll_timeout_ms=options.poll_timeout_ms, storage=options.storage)
        self._plan: QueryPlan | None = None
        self._previous_sigterm: Callable[[int, FrameType | None], Any] | int | None = None

    def __getstate__(self) -> dict[str, Any]:
        """Only what :meth:`read` needs travels to the executors: the options would import the member's packages
        in every executor worker, and the driver-side member and clients stay where they are."""
        return {"range_read": self.range_read, "_plan": None, "_previous_sigterm": None}

    # --- the driver side ---------------------------------------------------------------------------------------
    def initialOffset(self) -> dict[str, Any]:
        """No partition yet: every partition enters the query as acquired, with its starting point in the offset."""
        return self._query_plan().initial_offset()

    def getDefaultReadLimit(self) -> ReadLimit:
        """``maxOffsetsPerTrigger``, else everything available."""
        limit = self.options.max_offsets_per_trigger
        return ReadMaxRows(limit) if limit is not None else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        """Record the log-end offsets of every partition of the subscribed topics: the run's target."""
        self._query_plan().prepare_available_now()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        """Commit ``start``, rebalance, and plan the next end offset (see the module docstring)."""
        return self._query_plan().latest_offset(start, limit)

    def reportLatestOffset(self) -> dict[str, Any] | None:
        """The log ends of the last plan and the group's lag at its batch's end, for the query's progress
        (:mod:`~groupcoord.source.progress`); ``None`` before the first plan."""
        return self._plan.lag if self._plan is not None else None

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        """The batch's offset ranges, from ``start`` and ``end`` alone, cut for ``minPartitions``."""
        from groupcoord.source.query_plan import input_ranges

        return [OffsetRange(tp.topic, tp.partition, low, high) for tp, low, high in input_ranges(self.options,
                                                                                                   start, end)]

    def commit(self, end: dict[str, Any]) -> None:
        """Spark finished the batches up to ``end``: commit the positions still owned from the same acquisition."""
        self._query_plan().commit(end)

    def stop(self) -> None:
        """The query ended: leave the group, so that its partitions move on at once."""
        if self._previous_sigterm is not None and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self._previous_sigterm)
            self._previous_sigterm = None
        if self._plan is not None:
            self._plan.close()

    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions the query's member owns now (none before the first ``latestOffset``)."""
        return self._plan.assignment() if self._plan is not None else frozenset()

    # --- the executor side -------------------------------------------------------------------------------------
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The records of one :class:`OffsetRange`, as Arrow batches."""
        assert isinstance(partition, OffsetRange)
        return read_range(self.range_read, partition.topic, partition.partition, partition.low, partition.high)

    # --- in Spark's driver-side worker -------------------------------------------------------------------------
    def _query_plan(self) -> QueryPlan:
        if self._plan is None:
            from groupcoord.source.query_plan import QueryPlan

            self._plan = QueryPlan(self.options, on_member=self._leave_on_sigterm)
        return self._plan

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
