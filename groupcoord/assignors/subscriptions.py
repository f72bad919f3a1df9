"""The balanced assignors' shared shape: the per-topic sticky target, globally balanced when subscriptions differ.

``sticky``, ``cooperative-sticky`` and ``uniform`` derive from :class:`GloballyBalancedAssignor`. Before planning,
``assign`` decides on the driver whether the call may hold a heterogeneous group (:func:`declared_heterogeneous`,
no job for constant or driver-local inputs: see :mod:`groupcoord.assignors.homogeneity`).

Only when the answer is yes does the call hand its groups to :mod:`groupcoord.assignors.global_balance` (the Python
algorithms in Python tasks, in the same one job, cooperative-sticky's revocations included); when it is no, the
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
from groupcoord.assignors.global_balance import python_assignment
from groupcoord.assignors.homogeneity import declared_heterogeneous
from groupcoord.assignors.prepare import Prepared

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
    _proven: bool = dataclasses.field(default=False, repr=False)
    """Set by the ``auto`` check, or by a caller that compared the members' topic sets itself (the coordinator):
    ``homogeneous`` is then a fact the plan may build on (see ``prepare``). A bare ``"homogeneous"`` is not: for
    a group that is not, the result is still valid, balanced topic by topic."""

    def __post_init__(self) -> None:
        if self.subscriptions not in SUBSCRIPTION_MODES:
            known = ", ".join(SUBSCRIPTION_MODES)
            raise ValueError(f"subscriptions must be one of {known}, got {self.subscriptions!r}")

    def assign(self, members: DataFrame, partitions: DataFrame, owned: DataFrame | None = None) -> DataFrame:
        """See :meth:`Assignor.assign` (and the module docstring for the subscriptions check)."""
        if self.subscriptions == "auto":
            mode: SubscriptionsMode = "heterogeneous" if declared_heterogeneous(members) else "homogeneous"
            checked = dataclasses.replace(self, subscriptions=mode, _proven=True)
            return super(GloballyBalancedAssignor, checked).assign(members, partitions, owned)
        return super().assign(members, partitions, owned)

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
        if self.subscriptions == "heterogeneous":
            return python_assignment(prepared, name=self.name, rack_aware=self.rack_aware)
        return self._plan(prepared)
