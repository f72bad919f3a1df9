"""The balanced assignors' shared shape: the per-topic sticky target, globally balanced when subscriptions differ.

``sticky``, ``cooperative-sticky`` and ``uniform`` derive from :class:`GloballyBalancedAssignor`. Before planning,
``assign`` decides whether the call may hold a heterogeneous group (:mod:`groupcoord.assignors.homogeneity`): with
no job for constant or driver-local members; otherwise, for a call of at most ``driver_rows`` input rows, the one
job that collects the call answers it on the driver (and a call that does differ is then assigned right there);
past that, one small aggregate job.

Only when the answer is yes does the call hand its groups to :mod:`groupcoord.assignors.global_balance` (the Python
algorithms on the driver or in Python tasks, cooperative-sticky's revocations included); when it is no, the
homogeneous plan runs (``Prepared.homogeneous``). A caller that knows its subscriptions skips the check with the
keyword-only option ``subscriptions="homogeneous"`` or ``"heterogeneous"`` (default ``"auto"``); saying
``"homogeneous"`` for a heterogeneous group yields a valid assignment balanced topic by topic only (a bare option is
not a proof: the general plan runs, with its per-topic scopes).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from pyspark.sql import Column, DataFrame

from groupcoord.assignors.balanced import balanced_target
from groupcoord.assignors.base import Assignor
from groupcoord.assignors.global_balance import (
    DRIVER_ROWS,
    collect_call,
    declares_different_topics,
    driver_assignment,
    python_assignment,
)
from groupcoord.assignors.homogeneity import declared_heterogeneous, heterogeneous_without_job
from groupcoord.assignors.prepare import Prepared
from groupcoord.assignors.schema import GROUP

SubscriptionsMode = Literal["auto", "homogeneous", "heterogeneous"]
"""How an assignor learns whether a call's groups subscribe alike: it checks (``auto``), or the caller says."""

SUBSCRIPTION_MODES: tuple[SubscriptionsMode, ...] = get_args(SubscriptionsMode)


@dataclass(frozen=True, kw_only=True)
class GloballyBalancedAssignor(Assignor):
    """Balanced first (globally, for heterogeneous subscriptions too), then as sticky as balance allows.

    ``rack_aware`` prefers same-rack members for the partitions that move; ``subscriptions`` is one of
    :data:`SUBSCRIPTION_MODES`.
    """

    rack_aware: bool = True
    subscriptions: SubscriptionsMode = "auto"
    driver_rows: int = DRIVER_ROWS
    """Heterogeneous calls of at most this many input rows run the algorithm on the driver (0: always in Python
    tasks); see :data:`~groupcoord.assignors.global_balance.DRIVER_ROWS`."""
    _proven: bool = dataclasses.field(default=False, repr=False)
    _collect_first: bool = dataclasses.field(default=False, repr=False)
    """Set by the ``auto`` check when only a job can tell: the call is collected first (when small) and its rows
    decide (see ``_assign``)."""
    """Set by the ``auto`` check, or by a caller that compared the members' topic sets itself (the coordinator):
    ``homogeneous`` is then a fact the plan may build on (see ``prepare``). A bare ``"homogeneous"`` is not: for
    a group that is not, the result is still valid, balanced topic by topic."""

    def __post_init__(self) -> None:
        if self.subscriptions not in SUBSCRIPTION_MODES:
            known = ", ".join(SUBSCRIPTION_MODES)
            raise ValueError(f"subscriptions must be one of {known}, got {self.subscriptions!r}")
        if isinstance(self.driver_rows, bool) or not isinstance(self.driver_rows, int) or self.driver_rows < 0:
            raise ValueError(f"driver_rows must be a non-negative integer, got {self.driver_rows!r}")

    def assign(self, members: DataFrame, partitions: DataFrame, owned: DataFrame | None = None) -> DataFrame:
        """See :meth:`Assignor.assign` (and the module docstring for the subscriptions check)."""
        if self.subscriptions != "auto":
            return super().assign(members, partitions, owned)
        known = heterogeneous_without_job(members)
        if known is None and self.driver_rows > 0:
            # Only a job can tell: collecting the call (when small) is that job, and answers on the driver.
            deciding = dataclasses.replace(self, subscriptions="heterogeneous", _collect_first=True)
            return super(GloballyBalancedAssignor, deciding).assign(members, partitions, owned)
        heterogeneous = declared_heterogeneous(members) if known is None else known
        mode: SubscriptionsMode = "heterogeneous" if heterogeneous else "homogeneous"
        checked = dataclasses.replace(self, subscriptions=mode, _proven=True)
        return super(GloballyBalancedAssignor, checked).assign(members, partitions, owned)

    def _homogeneity_proven(self, members: DataFrame) -> bool:
        return self._proven and self.subscriptions == "homogeneous"

    def _keep_first(self) -> Sequence[Column]:
        """Which owned partitions a member over its quota keeps first (before topic, partition)."""
        return ()

    def _plan(self, prepared: Prepared) -> DataFrame:
        """``_g, member_id, topic, partition``: the DataFrame plan for groups that subscribe alike (the sticky
        balanced target)."""
        return balanced_target(prepared, rack_aware=self.rack_aware, keep_first=self._keep_first())

    def _assign(self, prepared: Prepared) -> DataFrame:
        if self.subscriptions != "heterogeneous":
            return self._plan(prepared)
        rows = collect_call(prepared, self.driver_rows) if self.driver_rows > 0 else None
        if rows is not None and (not self._collect_first or declares_different_topics(rows)):
            return driver_assignment(prepared, rows, name=self.name, rack_aware=self.rack_aware)
        if self._collect_first and (rows is not None or not declared_heterogeneous(prepared.ranked, group=GROUP)):
            return self._plan(dataclasses.replace(prepared, homogeneous=True))
        return python_assignment(prepared, name=self.name, rack_aware=self.rack_aware)
