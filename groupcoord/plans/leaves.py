"""Frames made leaves of later plans, and plans made now: the same rows, a cheaper plan.

Each function returns a frame with exactly the rows of its argument. With the internals the leaf is tuned (it keeps
a partitioning later plans can use, or forgets its history); without them it is a plain public-API local checkpoint
(or the frame itself), which costs exchanges or planning time and nothing else.
"""

from __future__ import annotations

import re
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from groupcoord.plans.gate import Internals, through_internals

_ATTRIBUTE = re.compile(r"([^\s,()]+)#(\d+)L?")
"""An attribute as a plan prints it: ``name#exprId`` (``L`` after the id for longs)."""


def plan_now(frame: DataFrame) -> DataFrame:
    """``frame`` with its physical plan made now, under the session's current settings.

    A DataFrame keeps its plan once made: an action on the returned frame (``toArrow()``, ``collect()``) runs that
    plan whatever the session's settings are then. A frame derived from it is planned again, under the settings of
    that moment (same rows, perhaps another plan shape). Without the internals the returned frame is a lazy local
    checkpoint of ``frame``, planned when it is made: its rows are kept in the block manager once computed.
    """
    def internal(_: Internals) -> DataFrame:
        frame._jdf.queryExecution().executedPlan()
        return frame

    return through_internals("plan_now", frame.sparkSession, internal, lambda: frame.localCheckpoint(eager=False))


def checkpoint_leaf(frame: DataFrame, *, single_partition: bool) -> DataFrame:
    """``frame`` as a lazily computed local checkpoint: same rows, a leaf in any later plan, computed once.

    With the internals, the leaf also keeps a partitioning that later plans can use however they copy it. A
    checkpoint records the partitioning of the plan it came from, and two cases lose it, each costing an exchange
    (a stage, a shuffle of the rows) in every later window or join over the leaf:

    - One partition reported as something else (a join's ``(SinglePartition or SinglePartition)``), when
      ``single_partition`` says the caller runs as one task: Spark then plans an exchange into one partition again.
      The leaf is rebuilt as ``SinglePartition``, which satisfies every distribution and is compatible with any
      other small single-partition side. Not for larger single groups (``hashpartitioning(_g, 1)``): Spark
      re-shuffles a join of large single-partition sides (1M x 2000 took 4 more stages that way).
    - A hash partitioning on attributes whose qualifier differs from the leaf's output (sub-query names of SQL
      texts). When a later plan reads the leaf twice, Spark gives the second copy new attribute ids and rewrites
      the partitioning by attribute *equality*, qualifier included, so the copy reports a partitioning on
      attributes it does not have (1M x 2000 sticky 8.5 -> 6.6 s without those exchanges). The leaf is rebuilt
      partitioned on its own output attributes.

    The rebuilt leaf has the same RDD, attribute ids and size statistics (Spark re-shuffles a join of
    single-partition sides of unknown size).
    """
    leaf = frame.localCheckpoint(eager=False)
    return through_internals("checkpoint_leaf", leaf.sparkSession,
                             lambda internals: _with_portable_partitioning(internals, leaf, single_partition),
                             lambda: leaf)


def detached(frame: DataFrame) -> DataFrame:
    """``frame`` as a leaf over its (not yet computed) rows, with no memory of the plan it came from.

    A checkpoint remembers its origin plan (for statistics and attribute rewrites): a loop that cuts round r from
    plans over the leaves of round r - 1 then walks the whole history when optimising, several paths per round (8 s
    at round 7). The detached leaf is planned in O(1); it has no partitioning. Without the internals ``frame``
    itself is returned, and planning grows with the history.
    """
    def internal(internals: Internals) -> DataFrame:
        session = frame.sparkSession
        rows = frame._jdf.queryExecution().toRdd()
        return DataFrame(session._jsparkSession.internalCreateDataFrame(rows, frame._jdf.schema(), False), session)

    return through_internals("detached", frame.sparkSession, internal, lambda: frame)


def _with_portable_partitioning(internals: Internals, leaf: DataFrame, single_partition: bool) -> DataFrame:
    """``leaf`` (a local checkpoint) rebuilt with a partitioning later plans can use (see :func:`checkpoint_leaf`)."""
    plan = leaf._jdf.queryExecution().analyzed()
    partitioning = plan.outputPartitioning()
    described = partitioning.toString()
    if described == "SinglePartition":
        return leaf
    session = leaf.sparkSession
    if single_partition and partitioning.numPartitions() == 1:
        return _rebuilt(internals, session, plan, plan.output(), internals.single_partition)
    if not described.startswith("hashpartitioning("):
        return leaf
    output = plan.output()
    positions = {match.group(2): i for i, match in enumerate(_ATTRIBUTE.finditer(output.toString()))}
    keys = [match.group(2) for match in _ATTRIBUTE.finditer(described)]
    # Only a partitioning on plain attributes of the output can be rebound (``hashpartitioning(_g#10, 4)``).
    if not keys or any(key not in positions for key in keys) or described.count("#") != len(keys):
        return leaf
    attributes = internals.array_list()
    for key in keys:
        attributes.add(output.apply(positions[key]))
    rebound = internals.hash_partitioning(internals.converters.asScala(attributes).toSeq(),
                                          partitioning.numPartitions())
    return _rebuilt(internals, session, plan, output, rebound)


def _rebuilt(internals: Internals, session: SparkSession, plan: Any, output: Any, partitioning: Any) -> DataFrame:
    """A leaf (a checkpointed ``LogicalRDD``) over ``plan``'s RDD with ``output`` and ``partitioning``, keeping the
    plan's ordering and the optimiser's size statistics."""
    jsession = session._jsparkSession
    arguments = [output, plan.rdd(), partitioning, plan.outputOrdering(), False, internals.none, jsession,
                 internals.some(plan.stats()), internals.none]
    if internals.layout.logical_rdd_checkpoint_flag:
        arguments.append(True)  # isCheckpointedInput: the RDD is a checkpoint's
    relation = internals.logical_rdd(*arguments)
    return DataFrame(internals.dataset.ofRows(jsession, relation), session)
