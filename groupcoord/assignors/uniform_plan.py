"""``uniform``: the KIP-848 server-side assignor: balance first, then stickiness, rack-aware.

Homogeneous groups are balanced to within one partition per member; heterogeneous groups globally (counts within one, or
no partition could move to a member with two fewer that subscribes to its topic; see
:mod:`groupcoord.assignors.algorithms.global_balance`). It differs from ``sticky`` in what a member over its quota
keeps, and in what a member that must give partitions up gives first: rack locality ranks above stickiness, so a
rebalance also moves partitions towards their racks. Worked example: C0 (rack a) owned [t0p0 (racks b), t0p1 (racks a)],
C1 (rack b) joins::

    C0: [t0p1]
    C1: [t0p0]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from pyspark.sql import Column
from pyspark.sql import functions as F

from groupcoord.assignors.sticky_plan import GloballyBalancedAssignor


@dataclass(frozen=True, kw_only=True)
class UniformAssignor(GloballyBalancedAssignor):
    """The uniform assignor."""

    name: ClassVar[str] = "uniform"

    def _keep_first(self) -> Sequence[Column]:
        if not self.rack_aware:
            return ()
        return [F.coalesce(F.array_contains(F.col("racks"), F.col("rack")), F.lit(False)).desc()]
