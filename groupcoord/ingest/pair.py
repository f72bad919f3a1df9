"""The ingestion job as one instance of a driver pair (``groupcoord cluster supervise --replicas 2``): two supervised
drivers of the same job, in the same group, each with its queries as members of it, so that a dead driver costs a
session timeout and a rebalance onto the other's queries instead of a cold start.

An instance learns its index from :data:`~groupcoord.cluster.supervisor.DRIVER_INSTANCE_ENV` (set by the supervisor)
and keeps its queries' checkpoints under a prefix of its own, ``<checkpoint>/driver-<index>/query-<i>``: two running
queries must never share a checkpoint, and the two instances' queries run at the same time. What the pair needs, and
:func:`check_pair` refuses without (exit 2, one line):

- the structured engine: the members engine's tasks are static members named by ``spark.groupcoord.instance.prefix``,
  so two applications' tasks would take each other's places;
- on a standalone master, ``spark.cores.max``: an application takes every free core by default, and the other
  instance would get no executor while its queries hold partitions they cannot read.

:func:`wait_for_executor` then holds the queries back until the application has an executor, so that an instance
that has none yet (the cluster's cores are taken) never takes partitions from the one that reads.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from groupcoord.cluster.supervisor import DRIVER_INSTANCE_ENV
from groupcoord.config import ConfigError
from groupcoord.ingest.warm_up import executor_count

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("groupcoord.ingest.pair")

EXECUTOR_POLL_S = 0.5
EXECUTOR_WAIT_LOG_S = 30.0
"""How often :func:`wait_for_executor` says it is still waiting."""


def driver_instance(environ: Mapping[str, str] | None = None) -> int | None:
    """This driver's index in its pair, from :data:`DRIVER_INSTANCE_ENV`; ``None`` when it runs alone."""
    text = (os.environ if environ is None else environ).get(DRIVER_INSTANCE_ENV, "").strip()
    if not text:
        return None
    if not text.isdigit():
        raise ConfigError(f"{DRIVER_INSTANCE_ENV} must be a driver instance number from 0, got {text!r}")
    return int(text)


def check_pair(instance: int | None, engine: str, spark_conf: Mapping[str, str]) -> None:
    """Refuse a pair instance that could not share the group's partitions safely (see the module)."""
    if instance is None:
        return
    if engine != "structured":
        raise ConfigError(f"a driver pair ({DRIVER_INSTANCE_ENV}={instance}) runs the structured engine only: the "
                          "members engine's static members would take each other's places")
    master = spark_conf.get("spark.master", "")
    if master.startswith("spark://") and not _dynamic_allocation(spark_conf) and not spark_conf.get("spark.cores.max"):
        raise ConfigError(f"a driver pair on a standalone master needs spark.cores.max ({DRIVER_INSTANCE_ENV}="
                          f"{instance}): without it the first application takes every core and the other's queries "
                          "hold partitions with no executor to read them")


def _dynamic_allocation(spark_conf: Mapping[str, str]) -> bool:
    return (spark_conf.get("spark.dynamicAllocation.enabled") or "false").lower() == "true"


def wait_for_executor(spark: SparkSession) -> float:
    """Wait until the application has at least one executor (never on a local master, nor with dynamic allocation,
    which starts executors only for tasks); returns the seconds waited."""
    context = spark.sparkContext
    if (context.master or "local").startswith("local") or _dynamic_allocation(dict(context.getConf().getAll())):
        return 0.0
    started = said = time.monotonic()
    while executor_count(spark) == 0:
        if time.monotonic() - said >= EXECUTOR_WAIT_LOG_S:
            log.info("no executor yet after %.0f s: the queries wait (their partitions stay with the other driver)",
                     time.monotonic() - started)
            said = time.monotonic()
        time.sleep(EXECUTOR_POLL_S)
    waited = time.monotonic() - started
    log.info("an executor registered after %.1f s", waited)
    return waited
