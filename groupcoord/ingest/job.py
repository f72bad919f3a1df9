"""The driver of the ingestion job's members engine: plan the run, start the executor members, watch, shut down.

:func:`run_ingest` is what ``jobs/streaming_ingest.py --engine members`` calls after parsing its flags (the default
engine is :func:`~groupcoord.ingest.structured.run_structured`, which shares :func:`create_sink` and
:func:`stop_on_signal` with it):

1. create the sink table (:data:`~groupcoord.ingest.config.SINK_SCHEMA`) if missing; with a Kafka source, copy
   the cluster's partition counts into the catalog now and every ``source.metadata.refresh.ms``
   (:class:`~groupcoord.ingest.catalog_sync.CatalogSync`);
2. with ``--available-now``, take the log-end offsets of every subscribed partition as the run's targets;
3. run ``members`` executor tasks as group members through :func:`groupcoord.spark.members.run_members`, each
   running :class:`~groupcoord.ingest.worker.IngestWork`;
4. SIGTERM (or SIGINT) creates the run's stop file; each member sees it, commits and leaves, and the job exits.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Unpack

from groupcoord.config import Config, ConfigError
from groupcoord.ingest.catalog_sync import CatalogSync, topic_filter
from groupcoord.ingest.config import SINK_SCHEMA, IngestConfig
from groupcoord.ingest.progress import ProgressMonitor, ProgressSample
from groupcoord.ingest.sources import SourceSpec
from groupcoord.ingest.stop import StopMarker, stop_on_signal
from groupcoord.ingest.worker import IngestPlan, IngestWork, LeaveAfter, Targets
from groupcoord.sink.commit import ensure_table
from groupcoord.sink.table import SinkTable
from groupcoord.state_root import StateRoot
from groupcoord.topics import TopicCatalog

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from groupcoord.spark.members import RunMembersOptions

log = logging.getLogger("groupcoord.ingest")


@dataclass(frozen=True)
class IngestResult:
    """How a run ended: the final progress sample, the targets (available-now) and what ``run_members`` returned."""

    final: ProgressSample
    targets: Targets | None
    members: Any


def subscribed_topics(catalog: TopicCatalog, config: IngestConfig) -> list[str]:
    """The catalog's topics the run consumes; a listed topic missing from the catalog raises :class:`ConfigError`."""
    counts = catalog.partition_counts()
    if config.topics is not None:
        missing = [t for t in config.topics if t not in counts]
        if missing:
            raise ConfigError(f"unknown topic(s) {', '.join(missing)} (not in the catalog of the state root)")
        return list(config.topics)
    wanted = topic_filter(None, config.pattern)
    return sorted(t for t in counts if wanted(t))


def available_now_targets(source: SourceSpec, catalog: TopicCatalog, topics: list[str]) -> Targets:
    """The log-end offset of every partition of ``topics``, now."""
    from kafka.structs import TopicPartition

    counts = catalog.partition_counts()
    partitions = [TopicPartition(t, p) for t in topics for p in range(counts.get(t, 0))]
    view = source.log_view()
    try:
        bounds = view.bounds(partitions)
    finally:
        view.close()
    return {(tp.topic, tp.partition): bounds[tp].end for tp in partitions}


def create_sink(config: IngestConfig, storage: Mapping[str, str] | None = None) -> SinkTable:
    """The job's sink table, created empty with :data:`~groupcoord.ingest.config.SINK_SCHEMA` when missing (once,
    here, rather than raced by every member or query); ``storage``: its ``storage.*`` settings on S3."""
    sink = SinkTable(config.sink, config.group_id, storage)
    ensure_table(sink.location, SINK_SCHEMA)
    return sink


def run_ingest(spark: SparkSession, config: IngestConfig, root: StateRoot, *, demo_leave_after: int | None = None,
               progress_interval_s: float = 2.0, tty: bool | None = None,
               work_type: Callable[[IngestPlan], IngestWork] = IngestWork, config_keys: Config | None = None,
               **member_options: Unpack[RunMembersOptions]) -> IngestResult:
    """Run the ingestion job until it is stopped (or, with ``available_now``, until it caught up); see the module.

    ``member_options`` go to ``run_members`` (and on to each ``GroupMember``: timeouts, assignors...);
    ``work_type`` builds the members' work from the plan (a seam for fault-injection tests); ``config_keys`` are
    the resolved ``spark.groupcoord.*`` keys for the coordinator and members (default: from the Spark conf).
    """
    catalog = TopicCatalog(root)
    source = SourceSpec.parse(config.source, state_root=root, kafka_config_file=config.kafka_config_file)
    from groupcoord.spark.members import run_members
    wanted = topic_filter(config.topics, config.pattern)
    sync: CatalogSync | None = None
    sink = create_sink(config, root.location.settings)
    if source.is_kafka:
        sync = CatalogSync(source.log_view(), wanted=wanted, interval_ms=config.metadata_refresh_ms)
        try:
            sync.start()
        except BaseException:
            sync.stop()
            raise
    try:
        topics = subscribed_topics(catalog, config)
        targets = available_now_targets(source, catalog, topics) if config.available_now else None
        if targets is not None:
            log.info("available-now: consuming up to %d records in %d partition(s)", sum(targets.values()),
                     len(targets))
        marker = StopMarker.new(root)
        plan = IngestPlan(
            group_id=config.group_id, source=source, sink=config.sink, sink_storage=dict(root.location.settings),
            max_records_per_batch=config.max_records_per_batch, auto_offset_reset=config.auto_offset_reset,
            targets=targets, stop=marker,
            leave_after=LeaveAfter(member_index=0, records=demo_leave_after) if demo_leave_after else None,
        )
        monitor = ProgressMonitor(root, source, sink, config.group_id, wanted, interval_s=progress_interval_s,
                                  tty=tty)
        options: RunMembersOptions = {"state_root": root.location.uri, "assignors": config.assignors, **member_options}
        if config.pattern is not None:
            options.setdefault("pattern", config.pattern)
        with stop_on_signal(marker), monitor:
            result = run_members(spark, config.group_id, list(config.topics) if config.topics else None,
                                 config.members, work_type(plan), config=config_keys, **options)
            final = monitor.stop()
        marker.remove()
        log.info("ingestion of group %s finished: %s", config.group_id, final.line())
        return IngestResult(final, targets, result)
    finally:
        if sync is not None:
            sync.stop()
