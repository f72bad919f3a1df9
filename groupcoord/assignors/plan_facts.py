"""Facts about the inputs that the optimiser can prove without running a job.

An assignor call plans branches it may not need: the owned claims (a fresh group owns nothing) and the same-rack
matching (no member has a rack, or no partition a replica rack). Each branch costs cuts (planning), operators and
window sorts. Whether a branch can be skipped is decided from the optimised plan only: Spark folds a filter whose
condition is constant false (``rack`` is a null literal, a column was absent) to an empty relation, and evaluates
filters over driver-local rows (``createDataFrame``) while optimising. Anything it cannot prove keeps the branch, so
skipping never changes a result.
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from groupcoord.spark import plan


def known_empty(frame: DataFrame) -> bool:
    """True when ``frame``'s optimised plan has at most zero rows (no job runs; False when unknown)."""
    return plan.max_rows(frame) == 0
