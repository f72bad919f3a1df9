"""Warming the executors' Python workers while the ingestion job's driver starts (the structured engine on a cluster).

On a fresh application (a first start, or the supervisor's restart after a driver died) every executor's first
Python task starts cold: Spark forks a Python worker, which imports pyarrow, delta-rs and groupcoord's source and sink
(hundreds of megabytes of native libraries) before it reads a record. Measured on the standalone cluster under load:
the first micro-batch's tasks took 28-30 s, the next ones 2 s, while the executors had been idle for 48 s, waiting
for the driver's coordinator and its queries to start.

:func:`daemon_settings` makes the executors' Python daemon (which forks every worker) :data:`DAEMON_MODULE`, which
imports :data:`WARM_MODULES` before it forks: each worker starts with them loaded. :func:`start_warm_up` runs one small
Spark job in a background thread as soon as the session exists: one task per executor slot, which starts that daemon
(its imports) on every executor while nothing else runs there, so the first micro-batch starts warm. (A worker kept from
the warm-up alone did not help: Spark drops a Python worker idle for a minute, and the first batch came 65 s later.) It
runs while the driver starts its coordinator and queries, and ends long before their first batch; it never runs on a
local master (the driver's own workers start as the queries plan, with nothing to overlap).
"""

from __future__ import annotations

import importlib
import logging
import threading
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["DAEMON_MODULE", "WARM_MODULES", "daemon_settings", "executor_count", "import_modules", "start_warm_up"]

log = logging.getLogger("groupcoord.ingest.warm_up")

WARM_MODULES = ("pyarrow.parquet", "pyarrow.fs", "deltalake", "obstore", "groupcoord.source.data_source",
                "groupcoord.sink.data_sink", "groupcoord.state_root", "groupcoord.topics", "confluent_kafka")
"""What an executor's task of the groupcoord source or the groupcoord-delta sink imports (the source's module loads
the embedded log's and the Kafka client's modules only where a read needs them, so they are named here)."""

DAEMON_MODULE = "groupcoord.ingest.python_daemon"
"""Spark's Python daemon with :data:`WARM_MODULES` imported before it forks a worker."""

EXECUTOR_WAIT_S = 30.0
"""How long the warm-up waits for the first executor to register before it gives up."""
SETTLE_S = 2.0
"""How long it then waits for the application's other executors (started with the first) to register, so that each
gets a task."""


def import_modules(_: Iterable[object]) -> None:
    """A warm-up task: import :data:`WARM_MODULES` in this Python worker."""
    for name in WARM_MODULES:
        importlib.import_module(name)


def daemon_settings(master: str) -> dict[str, str]:
    """The session settings that make the executors' Python daemon :data:`DAEMON_MODULE` (none on a local
    master)."""
    return {} if master.startswith("local") else {"spark.python.daemon.module": DAEMON_MODULE}


def start_warm_up(spark: SparkSession) -> threading.Thread | None:
    """Start warming the executors' Python workers in a daemon thread (see the module); ``None`` on a local
    master."""
    if (spark.sparkContext.master or "local").startswith("local"):
        return None
    thread = threading.Thread(target=_warm_up, args=(spark,), name="groupcoord-warm-up", daemon=True)
    thread.start()
    return thread


def _warm_up(spark: SparkSession) -> None:
    context = spark.sparkContext
    started = time.monotonic()
    try:
        while executor_count(spark) == 0:
            if time.monotonic() - started > EXECUTOR_WAIT_S:
                log.info("no executor registered within %.0f s: no Python worker warm-up", EXECUTOR_WAIT_S)
                return
            time.sleep(0.5)
        time.sleep(SETTLE_S)
        slots = max(1, context.defaultParallelism)
        context.setLocalProperty("spark.job.description", "groupcoord: warm up the executors' Python workers")
        context.parallelize(range(slots), slots).foreachPartition(import_modules)
        log.info("warmed the Python workers of %d executor slot(s) in %.1f s", slots, time.monotonic() - started)
    except Exception as exc:  # a warm-up that fails costs nothing but the time it saves
        log.info("Python worker warm-up failed: %s", str(exc).splitlines()[0] if str(exc) else type(exc).__name__)


def executor_count(spark: SparkSession) -> int:
    """The executors registered with the driver (the driver itself not counted)."""
    status = spark.sparkContext._jsc.sc().getExecutorMemoryStatus()  # includes the driver's block manager
    return max(0, int(status.size()) - 1)
