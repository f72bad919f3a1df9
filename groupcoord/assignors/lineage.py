"""Cutting a DataFrame's plan into a leaf without running anything, under the assignors' planning settings.

The assignors reuse intermediate frames in several branches. Spark's logical plans are trees, so every reuse copies
the whole sub-plan and analysis/optimisation time grows multiplicatively with the depth of reuse (seconds, then
out-of-memory, for the sticky plan). :func:`cut` replaces a frame by a local checkpoint of its (not yet computed)
RDD: later plans see a leaf that keeps the frame's output partitioning, and the rows are computed once, inside the
caller's job, then reused by every branch.

Cutting plans the sub-plan at once, so it must happen inside :func:`planning`, which switches a few session settings
for the duration of one ``assign`` call (one lock, one switch, one restore per call):

- adaptive execution off: it would run shuffle stages while planning (``assign`` would be eager, a job per cut);
- broadcast joins off: a broadcast is collected when the plan is prepared (again a job per cut), and the inputs are
  co-partitioned by group (:mod:`groupcoord.assignors.partitioning`) so a broadcast would only add work;
- ``requireAllClusterKeysForCoPartition`` off: join sides hash-partitioned by the group alone are co-partitioned for
  any join keyed by the group and more, so the plans need no exchange beyond the one per input;
- ``spark.sql.shuffle.partitions`` set to the call's partition count: the inputs' first windows, partitioned by the
  group alone, are where the one exchange per input is planned (:mod:`groupcoord.assignors.partitioning`).

The settings are session-wide. The lock serialises assignor calls; a query that another thread plans on the same
session during those milliseconds would see them too (results are the same, only the plan shape differs), so the
coordinator runs assignments on its own thread and the settings are restored before ``assign`` returns.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from py4j.java_gateway import JavaObject  # type: ignore[import-untyped]
from pyspark.sql import DataFrame, SparkSession

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

    ``single_task``: the inputs are small and run as one task (:mod:`groupcoord.assignors.partitioning`); their
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
    """Return ``frame`` as a lazily computed local checkpoint: same rows, a leaf in any later plan.

    Must be called inside :func:`planning`.
    """
    if not getattr(_ACTIVE, "depth", 0):
        raise RuntimeError("lineage.cut() outside lineage.planning()")
    return _with_portable_partitioning(frame.localCheckpoint(eager=False))


def cut_unless_single_task(frame: DataFrame) -> DataFrame:
    """:func:`cut` ``frame``, except in a single-task call, where re-planning a small projection of leaves where it
    is read costs less than the cut's two plannings."""
    if getattr(_ACTIVE, "single_task", False):
        return frame
    return cut(frame)


def planned(frame: DataFrame) -> DataFrame:
    """Return ``frame`` with its physical plan made now, under :func:`planning`'s settings.

    A DataFrame keeps its plan once made: an action on ``frame`` itself (``toArrow()``, ``collect()``) runs that
    plan whatever the session's settings are then. A frame derived from it is planned again, under the settings of
    that moment (same rows, perhaps another plan shape). Cheaper than :func:`cut` (which plans twice) for a frame that
    is read once.
    """
    if not getattr(_ACTIVE, "depth", 0):
        raise RuntimeError("lineage.planned() outside lineage.planning()")
    frame._jdf.queryExecution().executedPlan()
    return frame


_ATTRIBUTE = re.compile(r"([^\s,()]+)#(\d+)L?")
"""An attribute as a plan prints it: ``name#exprId`` (``L`` after the id for longs)."""


def _with_portable_partitioning(leaf: DataFrame) -> DataFrame:
    """``leaf`` (a local checkpoint) with a partitioning that later plans can use, however they copy it.

    A checkpoint records the partitioning of the plan it came from. Two cases lose it, each costing an exchange
    (a stage, a shuffle of the rows) in every later window or join over the leaf:

    - In a single-task call (``planning(single_task=True)``), one partition reported as something else: a
      join's ``(SinglePartition or SinglePartition)``. Spark then plans an exchange into one partition again; the
      leaf is rebuilt as ``SinglePartition``, which satisfies every distribution and is compatible with any other
      small single-partition side. Not for larger single groups (``hashpartitioning(_g, 1)``): Spark re-shuffles
      a join of large single-partition sides (1M x 2000 took 4 more stages that way).
    - A hash partitioning on attributes whose qualifier differs from the leaf's output (our SQL texts' sub-query
      names). When a later plan reads the leaf twice, Spark gives the second copy new attribute ids and rewrites
      the partitioning by attribute *equality*, qualifier included, so the copy reports a partitioning on
      attributes it does not have (1M x 2000 sticky 8.5 -> 6.6 s without those exchanges). The leaf is rebuilt
      partitioned on its own output attributes.

    The rebuilt leaf has the same RDD and attribute ids.
    """
    plan = leaf._jdf.queryExecution().analyzed()
    partitioning = plan.outputPartitioning()
    described = partitioning.toString()
    jvm = _Jvm.of(leaf.sparkSession)
    if described == "SinglePartition":
        return leaf
    if getattr(_ACTIVE, "single_task", False) and partitioning.numPartitions() == 1:
        return _rebuilt(leaf.sparkSession, plan.rdd(), plan.output(), jvm.single_partition, plan.outputOrdering(),
                        plan.stats())
    if not described.startswith("hashpartitioning("):
        return leaf
    output = plan.output()
    positions = {match.group(2): i for i, match in enumerate(_ATTRIBUTE.finditer(output.toString()))}
    keys = [match.group(2) for match in _ATTRIBUTE.finditer(described)]
    # Only a partitioning on plain attributes of the output can be rebound (``hashpartitioning(_g#10, 4)``).
    if not keys or any(key not in positions for key in keys) or described.count("#") != len(keys):
        return leaf
    attributes = jvm.array_list()
    for key in keys:
        attributes.add(output.apply(positions[key]))
    rebound = jvm.hash_partitioning(jvm.converters.asScala(attributes).toSeq(), partitioning.numPartitions())
    return _rebuilt(leaf.sparkSession, plan.rdd(), output, rebound, plan.outputOrdering(), plan.stats())


def _rebuilt(session: SparkSession, rdd: JavaObject, output: JavaObject, partitioning: JavaObject,
             ordering: JavaObject, stats: JavaObject) -> DataFrame:
    """A leaf (a checkpointed ``LogicalRDD``) over ``rdd`` with ``output``, ``partitioning``, ``ordering`` and the
    optimiser's size ``stats`` (Spark re-shuffles a join of single-partition sides of unknown size)."""
    jvm = _Jvm.of(session)
    relation = jvm.logical_rdd(
        output, rdd, partitioning, ordering, False, jvm.none, session._jsparkSession, jvm.some(stats), jvm.none, True,
    )
    return DataFrame(jvm.dataset.ofRows(session._jsparkSession, relation), session)


class _Jvm:
    """The JVM classes :func:`_with_portable_partitioning` uses, looked up once per gateway: each step of a
    ``jvm.org.apache...`` path is a py4j round trip (seven for one class name), and ``cut`` runs a dozen times per
    ``assign`` call."""

    _cache: dict[int, _Jvm] = {}

    def __init__(self, session: SparkSession) -> None:
        jvm = session._jvm
        assert jvm is not None
        self.array_list = jvm.java.util.ArrayList
        self.converters = jvm.scala.jdk.javaapi.CollectionConverters
        self.hash_partitioning = jvm.org.apache.spark.sql.catalyst.plans.physical.HashPartitioning
        self.logical_rdd = jvm.org.apache.spark.sql.execution.LogicalRDD
        self.dataset = jvm.org.apache.spark.sql.classic.Dataset
        self.none = jvm.scala.Option.empty()
        self.some = jvm.scala.Some
        physical = jvm.org.apache.spark.sql.catalyst.plans.physical
        self.single_partition = getattr(physical, "SinglePartition$").__getattr__("MODULE$")

    @classmethod
    def of(cls, session: SparkSession) -> _Jvm:
        """The classes of ``session``'s gateway."""
        key = id(session._jvm)
        if key not in cls._cache:
            cls._cache[key] = cls(session)
        return cls._cache[key]
