"""``groupcoord.spark.register(spark)``: the ``groupcoord`` source (and sink) in a session, and the coordinator.

::

    import groupcoord.spark
    groupcoord.spark.register(spark, state_root="/data/gc")
    df = spark.readStream.format("groupcoord").option("group.id", "g").option("subscribe", "orders").load()

It

1. sets ``spark.groupcoord.state.root`` when ``state_root`` is given;
2. registers the ``groupcoord`` source with the session's ``spark.groupcoord.*`` conf as the defaults of its
   registry options (as they are now: later changes need another ``register``), and the ``groupcoord-delta`` sink
   when :mod:`groupcoord.sink.data_sink` is installed;
3. starts the state root's coordinator in this driver (a :class:`~groupcoord.host.background.BackgroundCoordinator`
   with server-side assignment on this session), or, when another process holds the lease, stands by to take it
   over when that process ends, as ``groupcoord serve`` does. Every application that registers is thus a standby.
   One coordinator per state root per driver; :func:`stop_coordinators` releases the leases. It also runs by itself
   when the script ends, before Python shuts its thread pools down (the step-down runs its storage calls on them), so
   a script that never calls it still releases the lease at once and a standby takes over without waiting.

Returns the coordinator (serving or standing by), or ``None`` without a state root.
"""

from __future__ import annotations

import concurrent.futures.thread
import logging
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from groupcoord.config import PREFIX, full_name, resolve_config
from groupcoord.config.binding import split_list
from groupcoord.state_root import StateRoot

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from groupcoord.host.background import BackgroundCoordinator

log = logging.getLogger("groupcoord.spark.registration")

COORDINATOR_START_TIMEOUT_S = 60.0

_coordinators: dict[str, BackgroundCoordinator] = {}
_lock = threading.Lock()


def session_groupcoord_conf(spark: SparkSession) -> dict[str, str]:
    """The session's ``spark.groupcoord.*`` settings (static conf, then runtime conf), by full key name."""
    conf = {k: v for k, v in spark.sparkContext.getConf().getAll() if k.startswith(PREFIX)}
    runtime = {k: str(v) for k, v in spark.conf.getAll.items() if k.startswith(PREFIX)}
    return {**conf, **runtime}


def register(spark: SparkSession, state_root: str | Path | None = None, *,
             start_coordinator: bool = True) -> BackgroundCoordinator | None:
    """Register the source (and sink) and start or stand by for the coordinator (see the module docstring)."""
    from groupcoord.source.data_source import GroupcoordSource

    if state_root is not None:
        spark.conf.set(full_name("state.root"), str(state_root))
    defaults = session_groupcoord_conf(spark)
    config = resolve_config(spark_conf=defaults)

    class SessionGroupcoordSource(GroupcoordSource):
        """``groupcoord`` with this session's defaults (pickled by value with them)."""

        session_defaults: Mapping[str, str] = defaults

    spark.dataSource.register(SessionGroupcoordSource)
    _register_sink(spark, state_root)
    location = config["state.root"]
    if location is None or not start_coordinator:
        return None
    return _coordinator(spark, StateRoot.open(location, create=True, storage=config.section("storage.")))


def _register_sink(spark: SparkSession, state_root: str | Path | None) -> None:
    try:
        from groupcoord.sink.data_sink import register_sink
    except ImportError:
        log.info("the groupcoord-delta sink is not installed; registered the groupcoord source only")
        return
    register_sink(spark, {"state.root": str(state_root)} if state_root is not None else None)


def _coordinator(spark: SparkSession, root: StateRoot) -> BackgroundCoordinator:
    from groupcoord.assignment.runner import spark_assignment_runner
    from groupcoord.host.background import BackgroundCoordinator
    from groupcoord.spark.members import coordinator_config

    key = _key(root.location.uri)
    with _lock:
        running = _coordinators.get(key)
        if running is not None:
            return running
        conf = session_groupcoord_conf(spark)
        config = coordinator_config(spark, resolve_config(spark_conf=conf), listen_given=full_name("listen") in conf)
        # The queries' own "assignors" options are not known yet: the session's default stands for them.
        runner = spark_assignment_runner(root, spark=spark, warm_up=config["assignor.warmup"],
                                         offered=split_list(str(config["assignors"])))
        coordinator = BackgroundCoordinator(root, config, assignment_runner=runner,
                                            target_assignment_runner=runner.targets)
        address = coordinator.start_or_stand_by(COORDINATOR_START_TIMEOUT_S)
        if address is None:
            log.info("standing by for the coordinator of %s (another process holds its lease)", root.location)
        else:
            log.info("coordinator of %s started in the driver at %s", root.location, address)
        _coordinators[key] = coordinator
        return coordinator


def stop_coordinator(state_root: str | Path) -> None:
    """Stop the coordinator (serving or standing by) that ``register`` started in this process for ``state_root``
    (when its queries are done; at the end of the script this happens by itself)."""
    with _lock:
        running = _coordinators.pop(_key(str(state_root)), None)
    if running is not None:
        running.stop()


def _key(state_root: str) -> str:
    """One name per state root: a directory resolved, an S3 root by its ``s3://`` URI (``s3a://`` is the same)."""
    if "://" in state_root and not state_root.startswith("file://"):
        return "s3://" + state_root.split("://", 1)[1].rstrip("/")
    return str(Path(state_root.removeprefix("file://")).resolve())


def stop_coordinators() -> None:
    """Stop every coordinator (serving or standing by) that ``register`` started in this process."""
    with _lock:
        running = list(_coordinators.values())
        _coordinators.clear()
    for coordinator in running:
        coordinator.stop()


def _stop_before_thread_pools_shut_down() -> None:
    """Run :func:`stop_coordinators` at interpreter exit, before the thread pools stop taking work.

    ``atexit`` hooks run after ``concurrent.futures`` has shut its executors down, and the step-down's storage calls
    (``asyncio.to_thread``) then fail with "cannot schedule new futures after shutdown", leaving the lease to expire.
    ``threading``'s exit hooks run earlier, newest first: this one is registered after ``concurrent.futures.thread``
    registered its own (the import above), so it runs before it."""
    assert concurrent.futures.thread  # imported for the order of the exit hooks
    threading._register_atexit(stop_coordinators)  # type: ignore[attr-defined]


_stop_before_thread_pools_shut_down()
