"""The balanced assignors' shared shape: the sticky target, per group, globally balanced when subscriptions differ.

``sticky``, ``cooperative-sticky`` and ``uniform`` derive from :class:`GloballyBalancedAssignor`. Their plan is the
sticky balanced target (:mod:`groupcoord.assignors.balanced`); a call that holds a heterogeneous group runs the
Python algorithms instead, on the driver or in Python tasks (:mod:`groupcoord.assignors.global_balance`), as
:func:`groupcoord.assignors.engine.choose_engine` decides. A caller that knows its subscriptions skips the check with
the keyword-only option ``subscriptions="homogeneous"`` or ``"heterogeneous"`` (default ``"auto"``); saying
``"homogeneous"`` for a heterogeneous group yields a valid assignment balanced topic by topic only (a bare option is
not a proof: the general plan runs, with its per-topic scopes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame

from groupcoord.assignors.balanced import balanced_target
from groupcoord.assignors.base import Assignor
from groupcoord.assignors.engine import DRIVER_PARTITIONS, SUBSCRIPTION_MODES, SubscriptionsMode
from groupcoord.assignors.prepare import Prepared


@dataclass(frozen=True, kw_only=True)
class GloballyBalancedAssignor(Assignor):
    """Balanced first (globally, for heterogeneous subscriptions too), then as sticky as balance allows.

    ``rack_aware`` prefers same-rack members for the partitions that move; ``subscriptions`` is one of
    :data:`~groupcoord.assignors.engine.SUBSCRIPTION_MODES`; ``driver_partitions``: a heterogeneous call small
    enough to collect (at most that many rows of members, partitions and claims) runs on the driver, 0 never (see
    :data:`~groupcoord.assignors.engine.DRIVER_PARTITIONS`).
    """

    rack_aware: bool = True
    subscriptions: SubscriptionsMode = "auto"
    driver_partitions: int = DRIVER_PARTITIONS

    def __post_init__(self) -> None:
        if self.subscriptions not in SUBSCRIPTION_MODES:
            known = ", ".join(SUBSCRIPTION_MODES)
            raise ValueError(f"subscriptions must be one of {known}, got {self.subscriptions!r}")
        if (isinstance(self.driver_partitions, bool) or not isinstance(self.driver_partitions, int)
                or self.driver_partitions < 0):
            raise ValueError(f"driver_partitions must be a non-negative integer, got {self.driver_partitions!r}")

    def _keep_first(self) -> Sequence[Column]:
        """Which owned partitions a member over its quota keeps first (before topic, partition)."""
        return ()

    def _plan(self, prepared: Prepared) -> DataFrame:
        """The sticky balanced target."""
        return balanced_target(prepared, rack_aware=self.rack_aware, keep_first=self._keep_first())
