"""``cooperative-sticky``: KIP-429's incremental rebalance on top of the sticky target.

A partition whose owner changes is revoked first: the round-1 output is the sticky target (globally balanced for
heterogeneous subscriptions, as ``sticky``'s) minus every partition that a member other than its target owner still
claims (among the partition's claimants in its highest generation, ``Prepared.claims``: a tie holds it back from
both claimants, as Kafka's ``CooperativeStickyAssignor`` does). Once the members have revoked it, the next round
(``owned`` = round-1 output) hands it to its new owner, so assignments converge within two rounds: round 1's output
is a subset of a balanced assignment, and the target keeps every owned partition of such a subset (for heterogeneous
groups too, see :mod:`groupcoord.assignors.algorithms.global_balance`). Worked example: C0 owned [t0p0, t0p1], C1
joins::

    round 1: C0: [t0p0]          (t0p1 revoked, not yet given to C1)
    round 2: C0: [t0p0]  C1: [t0p1]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from groupcoord.assignors.prepare import PARTITION_ORDER, Prepared
from groupcoord.assignors.schema import GROUP
from groupcoord.assignors.sticky_plan import GloballyBalancedAssignor


@dataclass(frozen=True, kw_only=True)
class CooperativeStickyAssignor(GloballyBalancedAssignor):
    """The cooperative sticky assignor."""

    name: ClassVar[str] = "cooperative-sticky"

    def _plan(self, prepared: Prepared) -> DataFrame:
        target = super()._plan(prepared)
        if not prepared.has_owned:  # nothing is claimed, so nothing changes owner
            return target
        claimants = prepared.claims.groupBy(GROUP, *PARTITION_ORDER).agg(F.collect_set("member_id").alias("_by"))
        return (
            target.join(claimants, [GROUP, *PARTITION_ORDER], "left")
            .where(F.col("_by").isNull() | F.forall("_by", lambda owner: owner == F.col("member_id")))
            .drop("_by")
        )
