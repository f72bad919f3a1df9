"""``uniform``: the KIP-848 server-side assignor: balance first, then stickiness, rack-aware.

Homogeneous groups are balanced to within one partition per member; heterogeneous groups topic by topic. It differs
from ``sticky`` in what a member over its quota keeps: partitions with a replica in the member's rack first, so a
rebalance also moves partitions towards their racks. Worked example: C0 (rack a) owned [t0p0 (racks b), t0p1
(racks a)], C1 (rack b) joins::

    C0: [t0p1]
    C1: [t0p0]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from groupcoord.assignors.balanced import balanced_target
from groupcoord.assignors.base import Assignor
from groupcoord.assignors.prepare import Prepared


@dataclass(frozen=True, kw_only=True)
class UniformAssignor(Assignor):
    """The uniform assignor."""

    name: ClassVar[str] = "uniform"
    rack_aware: bool = True

    def _assign(self, prepared: Prepared) -> DataFrame:
        same_rack = F.coalesce(F.array_contains(F.col("racks"), F.col("rack")), F.lit(False))
        keep_first = [same_rack.desc()] if self.rack_aware else []
        return balanced_target(prepared, rack_aware=self.rack_aware, keep_first=keep_first)
