"""Cutting a DataFrame's plan into a leaf without running anything.

The assignors reuse intermediate frames in several branches. Spark's logical plans are trees, so every reuse copies
the whole sub-plan and analysis/optimisation time grows multiplicatively with the depth of reuse (seconds, then
out-of-memory, for the sticky plan). :func:`cut` replaces a frame by a local checkpoint of its (not yet computed)
RDD: later plans see a leaf, and the rows are computed once, inside the caller's job, then reused by every branch.

Adaptive execution would run the sub-plan's shuffle stages at checkpoint time, which would make ``assign`` eager; so
the sub-plan is planned with AQE off (the final query still uses it). The session setting is switched under a lock
and restored at once; only this planning step sees it.
"""

from __future__ import annotations

import threading

from pyspark.sql import DataFrame

_AQE = "spark.sql.adaptive.enabled"
_LOCK = threading.Lock()


def cut(frame: DataFrame) -> DataFrame:
    """Return ``frame`` as a lazily computed local checkpoint: same rows, a leaf in any later plan."""
    conf = frame.sparkSession.conf
    with _LOCK:
        before = conf.get(_AQE)
        conf.set(_AQE, "false")
        try:
            return frame.localCheckpoint(eager=False)
        finally:
            conf.set(_AQE, before if before is not None else "true")
