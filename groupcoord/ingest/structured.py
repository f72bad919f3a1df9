"""The ingestion job's Structured Streaming engine (``--engine structured``): queries instead of member tasks.

:func:`run_structured` registers the ``groupcoord`` source and the ``groupcoord-delta`` sink in the session (the
coordinator starts in this driver, or stands by), then starts ``members`` queries in the job's group, each
``readStream.format("groupcoord")`` into ``writeStream.format("groupcoord-delta")`` on the same table, with a
checkpoint of its own (``<streaming.checkpoint>/query-<i>``, by default under the table's ``_checkpoints``). Each
query is one member of the group; they share the partitions and rebalance as they come and go.

- ``--available-now``: every query ends once it read its partitions up to the log ends it recorded at start (and
  leaves the group, so its partitions move to the queries still running; the last leaves nothing unread);
- otherwise each query runs micro-batches (``streaming.trigger.ms``) until SIGTERM or SIGINT stops them all;
- ``--demo-leave-after N``: query 0 stops once it has read ``N`` records, so its partitions move to the others.
- ``streaming.session.timeout.ms``: each query's member session timeout; when the driver dies, its queries'
  members hold their partitions this long after the next coordinator loaded, so a restarted driver's queries wait
  for it (10 s on a supervised cluster driver, README's "Running on a cluster").
- ``instance``: this driver's index in a driver pair (:mod:`groupcoord.ingest.pair`): its checkpoints are
  ``<streaming.checkpoint>/driver-<instance>/query-<i>``, its queries ``<group>-driver<instance>-<i>``, and they
  start once the application has an executor.

``max.records.per.batch`` is each query's ``maxOffsetsPerTrigger`` (records per micro-batch in all, shared among
its partitions by backlog, as Spark's Kafka source does). Both engines write the same table
(:data:`~groupcoord.ingest.config.SINK_SCHEMA`, created by the job) through the same writer, with the same app
transactions, so the lag table, the progress line and the exactly-once check read both alike, and either engine
resumes a table the other wrote.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from groupcoord.ingest.catalog_sync import topic_filter
from groupcoord.ingest.config import SINK_SCHEMA, IngestConfig
from groupcoord.ingest.job import create_sink
from groupcoord.ingest.pair import wait_for_executor
from groupcoord.ingest.progress import ProgressMonitor, ProgressSample
from groupcoord.ingest.sources import SourceSpec
from groupcoord.ingest.stop import StopMarker, stop_on_signal
from groupcoord.sink.options import location_text
from groupcoord.state_root import StateRoot
from groupcoord.storage.location import TableLocation, parse_location

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

log = logging.getLogger("groupcoord.ingest")

_POLL_S = 0.2
DEFAULT_SESSION_TIMEOUT_MS = 45000
"""Each query's member session timeout unless ``streaming.session.timeout.ms`` says otherwise (Kafka's default)."""


@dataclass(frozen=True)
class StructuredResult:
    """How a run ended: the final progress sample and the records each query read."""

    final: ProgressSample
    records_read: tuple[int, ...]


def query_checkpoint(config: IngestConfig, index: int, checkpoint: str | None,
                     storage: Mapping[str, str] | None = None, *, instance: int | None = None) -> TableLocation:
    """Where query ``index`` (of driver ``instance`` of a pair) keeps its checkpoint (a local directory or an S3
    prefix: Spark names it :attr:`~groupcoord.storage.location.TableLocation.spark_uri`)."""
    base = parse_location(location_text(checkpoint or config.sink, "checkpoint"), settings=storage)
    base = base if checkpoint else base / "_checkpoints"
    return (base if instance is None else base / f"driver-{instance}") / f"query-{index}"


def query_name(config: IngestConfig, index: int, instance: int | None = None) -> str:
    """Query ``index``'s name: ``<group>-<index>``, ``<group>-driver<instance>-<index>`` in a driver pair."""
    return f"{config.group_id}-{index}" if instance is None else f"{config.group_id}-driver{instance}-{index}"


def start_query(spark: SparkSession, config: IngestConfig, root: StateRoot, index: int, *,
                checkpoint: str | None, trigger_ms: int,
                session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS, instance: int | None = None) -> StreamingQuery:
    """Start query ``index`` of the run (see the module docstring)."""
    source = SourceSpec.parse(config.source, state_root=root, kafka_config_file=config.kafka_config_file)
    storage = dict(root.location.settings)
    reader = (spark.readStream.format("groupcoord").option("group.id", config.group_id)
              .option("state.root", root.location.uri).option("startingOffsets", config.auto_offset_reset)
              .option("session.timeout.ms", str(session_timeout_ms))
              .option("maxOffsetsPerTrigger", str(config.max_records_per_batch))
              .option("assignors", ",".join(config.assignors)))
    reader = reader.option("subscribe", ",".join(config.topics)) if config.topics is not None else \
        reader.option("subscribePattern", config.pattern or "")
    if source.servers is not None:
        reader = reader.option("kafka.bootstrap.servers", source.servers)
        # librdkafka's names pass through the source's mapping as they are; Spark redacts the password's value.
        reader = reader.options(**{f"kafka.{name}": value for name, value in source.kafka_settings.items()})
    reader = reader.options(**storage)
    writer = (reader.load().select(*SINK_SCHEMA.names).writeStream.format("groupcoord-delta")
              .queryName(query_name(config, index, instance)).option("path", config.sink)
              .option("group.id", config.group_id).option("state.root", root.location.uri).options(**storage)
              .option("checkpointLocation",
                      query_checkpoint(config, index, checkpoint, storage, instance=instance).spark_uri))
    writer = writer.trigger(availableNow=True) if config.available_now else \
        writer.trigger(processingTime=f"{trigger_ms} milliseconds")
    return writer.start()


def records_read(query: StreamingQuery) -> int:
    """Records the query has read so far (from its progress reports)."""
    return sum(int(p.get("numInputRows", 0)) for p in query.recentProgress)


def run_structured(spark: SparkSession, config: IngestConfig, root: StateRoot, *, checkpoint: str | None = None,
                   trigger_ms: int = 1000, session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS,
                   demo_leave_after: int | None = None, progress_interval_s: float = 2.0,
                   tty: bool | None = None, instance: int | None = None) -> StructuredResult:
    """Run ``config.members`` queries in the job's group until they finish or are stopped (see the module); as
    driver ``instance`` of a pair when given."""
    from groupcoord.spark import register
    from groupcoord.spark.registration import stop_coordinator
    from groupcoord.spark.s3a import use_s3a

    # A bad source fails before the coordinator starts.
    source = SourceSpec.parse(config.source, state_root=root, kafka_config_file=config.kafka_config_file)
    sink = create_sink(config, root.location.settings)
    log.info("group %s: sink %s open; registering the source and the coordinator", config.group_id, sink.location)
    register(spark, state_root=root.location.uri)
    checkpoints = query_checkpoint(config, 0, checkpoint, root.location.settings, instance=instance)
    use_s3a(spark, *(where for where in (root.location, sink.location, checkpoints) if not where.is_local),
            checkpoints=not checkpoints.is_local)
    monitor = ProgressMonitor(root, source, sink, config.group_id, topic_filter(config.topics, config.pattern),
                              interval_s=progress_interval_s, tty=tty)
    marker = StopMarker.local()
    queries: list[StreamingQuery] = []
    with stop_on_signal(marker), monitor:
        try:
            if instance is not None:
                wait_for_executor(spark)  # queries without an executor would hold partitions the other driver reads
            for index in range(config.members):
                queries.append(start_query(spark, config, root, index, checkpoint=checkpoint, trigger_ms=trigger_ms,
                                           session_timeout_ms=session_timeout_ms, instance=instance))
            pair = "" if instance is None else f" (driver {instance} of a pair, checkpoints under " \
                f"{checkpoints.uri.rsplit('/', 1)[0]})"
            log.info("group %s: %d structured streaming queries started%s", config.group_id, len(queries), pair)
            _watch(queries, marker, demo_leave_after)
        finally:
            for query in queries:
                if query.isActive:
                    query.stop()
            stop_coordinator(root.location.uri)  # release the lease now, before the final report
        final = monitor.stop()
    marker.remove()
    failed = [q for q in queries if q.exception() is not None]
    if failed:
        raise RuntimeError(f"query {failed[0].name} failed: {failed[0].exception()}")
    log.info("ingestion of group %s finished: %s", config.group_id, final.line())
    return StructuredResult(final, tuple(records_read(q) for q in queries))


def _watch(queries: list[StreamingQuery], marker: StopMarker, demo_leave_after: int | None) -> None:
    """Wait until every query ended; stop them all on a stop request or a failure; the demo's leave."""
    leaving = queries[0] if demo_leave_after and len(queries) > 1 else None
    while any(q.isActive for q in queries):
        if marker.requested() or any(q.exception() is not None for q in queries if not q.isActive):
            for query in queries:
                query.stop()
            return
        if leaving is not None and leaving.isActive and records_read(leaving) >= (demo_leave_after or 0):
            log.info("query %s leaves the group after %d records (demo); its partitions move", leaving.name,
                     records_read(leaving))
            leaving.stop()
            leaving = None
        time.sleep(_POLL_S)
