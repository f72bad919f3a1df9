"""Spark integration: DataFrame views of the coordinator's state (:mod:`groupcoord.spark.state`), executors as members
(:mod:`groupcoord.spark.members`), and :func:`register`, which puts the Structured Streaming source
(:mod:`groupcoord.source`) and sink (:mod:`groupcoord.sink`) in a session and starts the coordinator.

Import-light on purpose: importing ``groupcoord.spark`` loads neither pyspark nor deltalake; the submodules do.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from groupcoord.host.background import BackgroundCoordinator

__all__ = ["register"]


def register(spark: SparkSession, state_root: str | Path | None = None, *,
             start_coordinator: bool = True) -> BackgroundCoordinator | None:
    """Register the ``groupcoord`` source and ``groupcoord-delta`` sink in ``spark`` and start (or stand by for) the
    state root's coordinator in this driver; see :mod:`groupcoord.spark.registration`."""
    from groupcoord.spark.registration import register as register_streaming

    return register_streaming(spark, state_root, start_coordinator=start_coordinator)
