"""``sticky``: KIP-54's sticky assignor semantics, balance first and then stickiness, with no iteration.

Valid (a member only gets topics it subscribes to; every partition of a subscribed topic goes to one member), balanced
(counts differ by at most one, or no partition could move to a member with two fewer that subscribes to its topic:
heterogeneous groups are balanced globally, see :mod:`groupcoord.assignors.algorithms.global_balance`) and sticky (as
many owned partitions kept as balance allows).
Worked example: C0 owned [t0p0, t0p1, t0p2], C1 owned nothing, C2 joins; t0 has four partitions::

    C0: [t0p0, t0p1]      (kept; quota 2 because it owned the most)
    C1: [t0p2]            (moved: C0 was over quota)
    C2: [t0p3]

Heterogeneous: A subscribes to t1 and t2, B to t1, two partitions each, nothing owned. Topic by topic A would get
three and B one; globally balanced::

    A: [t2p0, t2p1]
    B: [t1p0, t1p1]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from groupcoord.assignors.subscriptions import GloballyBalancedAssignor


@dataclass(frozen=True, kw_only=True)
class StickyAssignor(GloballyBalancedAssignor):
    """The sticky assignor; ``rack_aware`` prefers same-rack members for the partitions that move."""

    name: ClassVar[str] = "sticky"
