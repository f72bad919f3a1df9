"""``sticky``: KIP-54's sticky assignor semantics, balance first and then stickiness, with no iteration.

Valid (a member only gets topics it subscribes to; every partition of a subscribed topic goes to one member),
balanced (per scope, counts differ by at most one) and sticky (as many owned partitions kept as balance allows).
Worked example: C0 owned [t0p0, t0p1, t0p2], C1 owned nothing, C2 joins; t0 has four partitions::

    C0: [t0p0, t0p1]      (kept; quota 2 because it owned the most)
    C1: [t0p2]            (moved: C0 was over quota)
    C2: [t0p3]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pyspark.sql import DataFrame

from groupcoord.assignors.balanced import balanced_target
from groupcoord.assignors.base import Assignor
from groupcoord.assignors.prepare import Prepared


@dataclass(frozen=True, kw_only=True)
class StickyAssignor(Assignor):
    """The sticky assignor; ``rack_aware`` prefers same-rack members for the partitions that move."""

    name: ClassVar[str] = "sticky"
    rack_aware: bool = True

    def _assign(self, prepared: Prepared) -> DataFrame:
        return balanced_target(prepared, rack_aware=self.rack_aware)
