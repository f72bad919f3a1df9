"""The balanced assignors' shared shape: the per-topic sticky target, globally balanced when subscriptions differ.

``sticky``, ``cooperative-sticky`` and ``uniform`` derive from :class:`GloballyBalancedAssignor`. Before planning,
``assign`` decides on the driver whether the call may hold a heterogeneous group (:func:`declared_heterogeneous`):

- the ``topics`` column is a constant in the optimised plan (the benchmarks' generated inputs): no, and no job;
- the members frame is driver-local (``DataFrame.isLocal()``): its ``group_id`` and ``topics`` are collected
  without a job (small bookkeeping: one row per member);
- otherwise one small job over the members frame alone (group, sorted distinct topics) answers it.

Only when the answer is yes does the plan get the rounds of :mod:`groupcoord.assignors.global_balance` (jobs run
inside ``assign``). A caller that knows its subscriptions skips the check with the keyword-only option
``subscriptions="homogeneous"`` or ``"heterogeneous"`` (default ``"auto"``); saying ``"homogeneous"`` for a
heterogeneous group yields a valid assignment balanced topic by topic only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from groupcoord.assignors.balanced import balanced_target
from groupcoord.assignors.base import Assignor
from groupcoord.assignors.global_balance import rebalance
from groupcoord.assignors.prepare import Prepared

SUBSCRIPTION_MODES: tuple[str, ...] = ("auto", "homogeneous", "heterogeneous")


def _constant_column(frame: DataFrame, column: str) -> bool:
    """Whether ``column`` is a literal in ``frame``'s optimised plan (then every row holds the same value)."""
    plan = frame.select(column)._jdf.queryExecution().optimizedPlan()
    if plan.nodeName() != "Project":
        return False
    expression = plan.projectList().apply(0)
    if expression.getClass().getSimpleName() == "Alias":
        expression = expression.child()
    return bool(expression.foldable())


def declared_heterogeneous(members: DataFrame) -> bool:
    """Whether some group's members declare different topic lists (as sets).

    A superset of the heterogeneous groups: a topic that does not exist can make declared lists differ while the
    existing subscriptions agree; such a group takes the rounds and finds nothing to move. Inputs with a bad
    ``topics`` column answer False here and are rejected by the input validation.
    """
    fields = {field.name: field.dataType for field in members.schema.fields}
    if not isinstance(fields.get("topics"), T.ArrayType) or _constant_column(members, "topics"):
        return False
    group = F.col("group_id").cast("string") if "group_id" in fields else F.lit("")
    # A null list subscribes to nothing, like an empty one (and countDistinct would not count a null).
    topic_set = F.coalesce(F.sort_array(F.array_distinct("topics")), F.array().cast("array<string>"))
    declared = members.select(group.alias("g"), topic_set.alias("t"))
    if members.isLocal():
        seen: dict[object, object] = {}
        return any(seen.setdefault(row["g"], row["t"]) != row["t"] for row in declared.collect())
    return not declared.groupBy("g").agg(F.countDistinct("t").alias("_n")).where(F.col("_n") > 1).isEmpty()


@dataclass(frozen=True, kw_only=True)
class GloballyBalancedAssignor(Assignor):
    """Balanced first (globally, for heterogeneous subscriptions too), then as sticky as balance allows.

    ``rack_aware`` prefers same-rack members for the partitions that move; ``subscriptions`` is one of
    :data:`SUBSCRIPTION_MODES`.
    """

    rack_aware: bool = True
    subscriptions: str = "auto"
    _proven: bool = dataclasses.field(default=False, repr=False)
    """Set by the ``auto`` check, or by a caller that compared the members' topic sets itself (the coordinator):
    ``homogeneous`` is then a fact the plan may build on (see ``prepare``). A bare ``"homogeneous"`` is not: for
    a group that is not, the result is still valid, balanced topic by topic."""

    rack_first: ClassVar[bool] = False
    """Whether rack locality ranks above stickiness when a member must give partitions up (``uniform``)."""

    def __post_init__(self) -> None:
        if self.subscriptions not in SUBSCRIPTION_MODES:
            known = ", ".join(SUBSCRIPTION_MODES)
            raise ValueError(f"subscriptions must be one of {known}, got {self.subscriptions!r}")

    def assign(self, members: DataFrame, partitions: DataFrame, owned: DataFrame | None = None) -> DataFrame:
        """See :meth:`Assignor.assign`; heterogeneous calls run their balancing rounds here (see module doc)."""
        if self.subscriptions == "auto":
            mode = "heterogeneous" if declared_heterogeneous(members) else "homogeneous"
            checked = dataclasses.replace(self, subscriptions=mode, _proven=True)
            return super(GloballyBalancedAssignor, checked).assign(members, partitions, owned)
        return super().assign(members, partitions, owned)

    def _homogeneity_proven(self) -> bool:
        return self._proven and self.subscriptions == "homogeneous"

    def _keep_first(self) -> Sequence[Column]:
        """Which owned partitions a member over its quota keeps first (before topic, partition)."""
        return ()

    def _target(self, prepared: Prepared) -> DataFrame:
        """``_g, member_id, topic, partition``: the sticky balanced target, globally balanced if needed."""
        target = balanced_target(prepared, rack_aware=self.rack_aware, keep_first=self._keep_first())
        if self.subscriptions != "heterogeneous":
            return target
        return rebalance(prepared, target, rack_aware=self.rack_aware, rack_first=self.rack_first)

    def _assign(self, prepared: Prepared) -> DataFrame:
        return self._target(prepared)
