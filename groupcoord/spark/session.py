"""The one builder of a *local* SparkSession: tests, ``groupcoord serve`` outside a driver, and benchmarks.

Every local session groupcoord starts shares the same settings: no UI and no console progress bar (nobody watches them,
and the UI takes a port), UTC for both Spark SQL and the JVM (Delta timestamps are UTC, and a result must not depend on
the machine's zone), Arrow on (state and assignments cross between Spark and delta-rs as Arrow), few shuffle partitions,
file-listing tasks and snapshot partitions (the data is small), the Python workers on this interpreter, Spark's own
logging quiet, and a generated-code cache large enough for the assignors: one assignor call generates a few hundred code
units, more than the default cache of 100 holds, so every call would compile them again (about 1.3 s of a small group's
call). Delta's jars, SQL extension and catalog are on (with Spark's Kafka source jar), so ``spark.read.format("delta")``
and ``format("kafka")`` work in every session groupcoord builds. PySpark's DataFrame debugging (the Python call site
attached to every function and Column call) is off: it costs about five py4j round trips per call, over a thousand per
assignor call, and only decorates error messages.

spark-submit entry points (``jobs/``, :mod:`groupcoord.admin.checkpoint_job`, :mod:`groupcoord.ingest.entry`) do
NOT use this: they must take the master and every setting from spark-submit.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from groupcoord.config.jars import delta_settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("groupcoord.spark.session")

UTC_JAVA_OPTION = "-Duser.timezone=UTC"

CODEGEN_CACHE_ENTRIES = "2000"
"""``spark.sql.codegen.cache.maxEntries`` for sessions that run assignors (a static setting: set it at start-up)."""

LISTING_PARALLELISM = "4"
"""Tasks of a parallel file listing (Spark's default is 10,000): Delta's VACUUM lists a table with one such job,
and on a small local table 10,000 tasks took 26-34 s where 4 take 7 s."""

SNAPSHOT_PARTITIONS = "1"
"""Partitions of delta-spark's snapshot reconstruction (Delta's default is 50): a local table's log holds a few
hundred actions, and a ``versionAsOf`` read of a 12-commit table took 3.4 s with 50 and 0.6 s with 1."""

SMALL_TABLE_SETTINGS: dict[str, str] = {
    "spark.sql.sources.parallelPartitionDiscovery.parallelism": LISTING_PARALLELISM,
    "spark.databricks.delta.snapshotPartitions": SNAPSHOT_PARTITIONS,
}
"""Delta and file listing sized for small local tables: every local session gets them, and ``bin/spark-submit`` on a
local master (:mod:`groupcoord.spark.submit`)."""

_EMPTY: Mapping[str, str] = {}


def local_settings(*, shuffle_partitions: int = 2) -> dict[str, str]:
    """The Spark settings every local session gets (before the caller's ``extra``)."""
    return {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.extraJavaOptions": UTC_JAVA_OPTION,
        "spark.executor.extraJavaOptions": UTC_JAVA_OPTION,
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        **SMALL_TABLE_SETTINGS,
        "spark.sql.codegen.cache.maxEntries": CODEGEN_CACHE_ENTRIES,
        "spark.python.sql.dataFrameDebugging.enabled": "false",
        **delta_settings(),
    }


def local_session(
    *,
    master: str,
    app_name: str,
    shuffle_partitions: int = 2,
    log_level: str = "ERROR",
    extra: Mapping[str, str] = _EMPTY,
) -> SparkSession:
    """Get or create a SparkSession on ``master`` (``local[2]``, ``local[4,4]``, ``local[*]``) with the shared settings.

    ``extra`` adds or overrides settings (``spark.driver.memory``, ``spark.default.parallelism``, ...). As with
    ``getOrCreate``, an already running session is returned; static settings (master, JVM options) then keep the
    values it was started with.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in {**local_settings(shuffle_partitions=shuffle_partitions), **extra}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel(log_level)
    return session


def active_or_local_session() -> SparkSession:
    """The active SparkSession, or a new small local one for server-side assignment (``serve`` outside a Spark
    driver); logs what starting it cost."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    started = time.perf_counter()
    session = local_session(master="local[2]", app_name="groupcoord-serve-assignor")
    log.info("started a local SparkSession for server-side assignment in %.1f s", time.perf_counter() - started)
    return session
