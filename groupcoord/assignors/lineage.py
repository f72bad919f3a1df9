"""Cutting a DataFrame's plan into a leaf without running anything.

The assignors reuse intermediate frames in several branches. Spark's logical plans are trees, so every reuse copies
the whole sub-plan and analysis/optimisation time grows multiplicatively with the depth of reuse (seconds, then
out-of-memory, for the sticky plan). :func:`cut` replaces a frame by a local checkpoint of its (not yet computed)
RDD: later plans see a leaf that keeps the frame's output partitioning, and the rows are computed once, inside the
caller's job, then reused by every branch.

Planning the sub-plan must not run anything, or ``assign`` would be eager and every cut would cost a Spark job. Two
session settings would: adaptive execution (it runs shuffle stages while planning) and broadcast joins (a broadcast
is collected when the plan is prepared). Both are switched off for this planning step only, under a lock, and
restored at once. The inputs are co-partitioned by group (:mod:`groupcoord.assignors.partitioning`), and with
``requireAllClusterKeysForCoPartition`` off (same lock) Spark uses that for joins too, so the resulting plans need
no exchange at all: a broadcast would only add a job.
"""

from __future__ import annotations

import threading

from pyspark.sql import DataFrame

_PLANNING: dict[str, str] = {
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    # Join sides hash-partitioned by the group alone are co-partitioned for any join keyed by the group and more.
    "spark.sql.requireAllClusterKeysForCoPartition": "false",
}
_LOCK = threading.Lock()


def cut(frame: DataFrame) -> DataFrame:
    """Return ``frame`` as a lazily computed local checkpoint: same rows, a leaf in any later plan."""
    conf = frame.sparkSession.conf
    with _LOCK:
        before: dict[str, str | None] = {key: conf.get(key, None) for key in _PLANNING}
        for key, value in _PLANNING.items():
            conf.set(key, value)
        try:
            return frame.localCheckpoint(eager=False)
        finally:
            for key, previous in before.items():
                if previous is None:
                    conf.unset(key)
                else:
                    conf.set(key, previous)
