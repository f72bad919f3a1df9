"""Facts read from a plan or the cluster without running a job; None or False when only the internals know.

Each answer is a hint for planning: a caller treats "unknown" as the case that needs more work (keep a branch, plan
for a large input, collect instead of trusting a literal), never as a different result.
"""

from __future__ import annotations

from pyspark import SparkContext
from pyspark.sql import DataFrame

from groupcoord.plans.gate import Internals, through_internals


def max_rows(frame: DataFrame) -> int | None:
    """The most rows ``frame``'s optimised plan can produce, when the optimiser proves a bound (else None).

    Spark folds a filter whose condition is constant false to an empty relation, and evaluates filters over
    driver-local rows while optimising, so ``0`` proves a frame empty with no job.
    """
    def internal(_: Internals) -> int | None:
        rows = frame._jdf.queryExecution().optimizedPlan().maxRows()
        return int(rows.get()) if rows.isDefined() else None

    return through_internals("max_rows", frame.sparkSession, internal, lambda: None)


def estimated_bytes(frame: DataFrame) -> int | None:
    """The optimiser's size estimate of ``frame`` in bytes (unknown sources estimate very large; None when the
    estimate cannot be read)."""
    def internal(_: Internals) -> int:
        size = frame._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()
        return size if isinstance(size, int) else int(size.toString())

    return through_internals("estimated_bytes", frame.sparkSession, internal, lambda: None)


def is_constant_column(frame: DataFrame, column: str) -> bool:
    """Whether ``column`` is a literal in ``frame``'s optimised plan, so every row holds the same value (False when
    unknown).

    The frame's own optimised plan is read (a frame keeps it): an optimiser keeps a plan's output, so a top
    ``Project`` lists the frame's columns in order.
    """
    def internal(_: Internals) -> bool:
        plan = frame._jdf.queryExecution().optimizedPlan()
        if plan.nodeName() != "Project":
            return False
        expression = plan.projectList().apply(frame.columns.index(column))
        if expression.getClass().getSimpleName() == "Alias":
            expression = expression.child()
        return bool(expression.foldable())

    return through_internals("is_constant_column", frame.sparkSession, internal, lambda: False)


def registered_executors(context: SparkContext) -> int | None:
    """How many executors have registered with ``context`` (the driver not counted); None when unknown."""
    def internal(_: Internals) -> int:
        return int(context._jsc.sc().getExecutorMemoryStatus().size()) - 1  # the driver is listed too

    return through_internals("registered_executors", context, internal, lambda: None)


def known_empty(frame: DataFrame) -> bool:
    """True when ``frame``'s optimised plan has at most zero rows (no job runs; False when unknown).

    An assignor call plans branches it may not need: the owned claims (a fresh group owns nothing) and the same-rack
    matching (no member has a rack, or no partition a replica rack). Spark folds a filter whose condition is constant
    false (``rack`` is a null literal, a column was absent) to an empty relation, and evaluates filters over
    driver-local rows (``createDataFrame``) while optimising; anything it cannot prove keeps the branch, so skipping
    never changes a result.
    """
    return max_rows(frame) == 0
