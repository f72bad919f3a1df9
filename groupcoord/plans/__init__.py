"""Plan tuning through Spark's private JVM internals, each with a public-API fallback: the only place that uses them.

Everything in groupcoord that reaches past PySpark's public API (``_jdf``, ``_jsc``, ``_jvm``, JVM classes) does it
here, behind this interface:

- facts, read without a job (:mod:`~groupcoord.plans.facts`): :func:`max_rows`, :func:`known_empty`,
  :func:`estimated_bytes`, :func:`is_constant_column`, :func:`registered_executors`;
- leaves and plans (:mod:`~groupcoord.plans.leaves`): :func:`checkpoint_leaf`, :func:`detached`,
  :func:`plan_now`;
- the assignors' plan tuning, built on those: :mod:`~groupcoord.plans.lineage` (cutting a plan into leaves under
  the planning settings), :mod:`~groupcoord.plans.partitioning` (one exchange per input, or one task for small
  inputs), :mod:`~groupcoord.plans.sql` (plans as SQL texts over named frames);
- the switch (:mod:`~groupcoord.plans.gate`): :data:`INTERNALS_ENV`, :data:`VERIFIED_SPARK_VERSIONS`,
  :func:`internals_of`, :func:`failed_features`.

The contract: every function gives the same rows (or a hint that leads to the same rows) with or without the
internals. The internals are used on a classic session of a Spark version listed in
:data:`VERIFIED_SPARK_VERSIONS`; under Spark Connect, on another version, with
``GROUPCOORD_SPARK_PLAN_INTERNALS=off``, or when a call finds a method or constructor that differs, the function
falls back to the public API (``localCheckpoint``, the frame itself, "unknown"). A Spark upgrade therefore costs
speed, never correctness; to make it fast again, check the internals against the new version and add its
:class:`~groupcoord.plans.gate.Layout`.

Layering (``docs/architecture.md``): this package imports only pyspark and py4j, nothing else of groupcoord, so it
sits a layer below the assignors, which import it (the assignors are Spark plans and this is where their
Spark-version-dependent tuning lives), while the rest of ``groupcoord.spark`` sits above the assignors and runs them.
"""

from __future__ import annotations

from groupcoord.plans.facts import (
    estimated_bytes,
    is_constant_column,
    known_empty,
    max_rows,
    registered_executors,
)
from groupcoord.plans.gate import INTERNALS_ENV, VERIFIED_SPARK_VERSIONS, failed_features, internals_of
from groupcoord.plans.leaves import checkpoint_leaf, detached, plan_now

__all__ = [
    "INTERNALS_ENV",
    "VERIFIED_SPARK_VERSIONS",
    "checkpoint_leaf",
    "detached",
    "estimated_bytes",
    "failed_features",
    "internals_of",
    "is_constant_column",
    "known_empty",
    "max_rows",
    "plan_now",
    "registered_executors",
]
