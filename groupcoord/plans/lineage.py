"""Cutting a DataFrame's plan into a leaf without running anything, under the assignors' planning settings.

The assignors reuse intermediate frames in several branches. Spark's logical plans are trees, so every reuse copies
the whole sub-plan and analysis/optimisation time grows multiplicatively with the depth of reuse (seconds, then
out-of-memory, for the sticky plan). :func:`cut` replaces a frame by a local checkpoint of its (not yet computed)
RDD: later plans see a leaf that keeps the frame's output partitioning, and the rows are computed once, inside the
caller's job, then reused by every branch. The leaf is made by :mod:`groupcoord.plans`, which tunes it through
Spark's internals where it can and falls back to a plain local checkpoint where it cannot.

Cutting plans the sub-plan at once, so it must happen inside :func:`planning`, which switches a few session settings
for the duration of one ``assign`` call (one lock, one switch, one restore per call):

- adaptive execution off: it would run shuffle stages while planning (``assign`` would be eager, a job per cut);
- broadcast joins off: a broadcast is collected when the plan is prepared (again a job per cut), and the inputs are
  co-partitioned by group (:mod:`groupcoord.plans.partitioning`) so a broadcast would only add work;
- ``requireAllClusterKeysForCoPartition`` off: join sides hash-partitioned by the group alone are co-partitioned for
  any join keyed by the group and more, so the plans need no exchange beyond the one per input;
- ``spark.sql.shuffle.partitions`` set to the call's partition count: the inputs' first windows, partitioned by the
  group alone, are where the one exchange per input is planned (:mod:`groupcoord.plans.partitioning`).

The settings are session-wide. The lock serialises assignor calls; a query that another thread plans on the same
session during those milliseconds would see them too (results are the same, only the plan shape differs), so the
coordinator runs assignments on its own thread and the settings are restored before ``assign`` returns.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import DataFrame, SparkSession

from groupcoord.plans.leaves import checkpoint_leaf, plan_now

_PLANNING: dict[str, str] = {
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    "spark.sql.requireAllClusterKeysForCoPartition": "false",
    "spark.sql.constraintPropagation.enabled": "false",
}
_LOCK = threading.RLock()
_ACTIVE = threading.local()


@contextmanager
def planning(session: SparkSession, *, shuffle_partitions: int, single_task: bool = False) -> Iterator[None]:
    """Hold the assignors' planning settings on ``session`` (under a lock) while the body builds and cuts a plan.

    ``single_task``: the inputs are small and run as one task (:mod:`groupcoord.plans.partitioning`); their
    plans then skip whole-stage code generation, whose generated source costs more to produce than it saves on a few
    hundred rows.
    """
    settings = {**_PLANNING, "spark.sql.shuffle.partitions": str(shuffle_partitions)}
    if single_task:
        settings["spark.sql.codegen.wholeStage"] = "false"
    conf = session.conf
    with _LOCK:
        before: dict[str, str | None] = {key: conf.get(key, None) for key in settings}
        for key, value in settings.items():
            if before[key] != value:
                conf.set(key, value)
        depth = getattr(_ACTIVE, "depth", 0)
        single = getattr(_ACTIVE, "single_task", False)
        _ACTIVE.depth = depth + 1
        _ACTIVE.single_task = single_task
        try:
            yield
        finally:
            _ACTIVE.depth = depth
            _ACTIVE.single_task = single
            for key, previous in before.items():
                if previous == settings[key]:
                    continue
                if previous is None:
                    conf.unset(key)
                else:
                    conf.set(key, previous)


def cut(frame: DataFrame) -> DataFrame:
    """Return ``frame`` as a lazily computed local checkpoint: same rows, a leaf in any later plan that keeps a
    usable partitioning (:func:`groupcoord.plans.leaves.checkpoint_leaf`).

    Must be called inside :func:`planning`.
    """
    if not getattr(_ACTIVE, "depth", 0):
        raise RuntimeError("lineage.cut() outside lineage.planning()")
    return checkpoint_leaf(frame, single_partition=single_task_call())


def cut_unless_single_task(frame: DataFrame) -> DataFrame:
    """:func:`cut` ``frame``, except in a single-task call, where re-planning a small projection of leaves where it
    is read costs less than the cut's two plannings."""
    if single_task_call():
        return frame
    return cut(frame)


def single_task_call() -> bool:
    """Whether the current :func:`planning` is for a single-task call (its inputs are one partition each)."""
    return bool(getattr(_ACTIVE, "single_task", False))


def planned(frame: DataFrame) -> DataFrame:
    """Return ``frame`` with its physical plan made now, under :func:`planning`'s settings
    (:func:`groupcoord.plans.leaves.plan_now`).

    An action on the returned frame runs that plan whatever the session's settings are then; a frame derived from
    it is planned again (same rows, perhaps another plan shape). Cheaper than :func:`cut` (which plans twice) for a
    frame that is read once.
    """
    if not getattr(_ACTIVE, "depth", 0):
        raise RuntimeError("lineage.planned() outside lineage.planning()")
    return plan_now(frame)
