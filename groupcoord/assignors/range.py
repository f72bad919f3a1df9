"""``range``: Kafka's ``RangeAssignor``, topic by topic, as one window-and-join plan.

For each topic, the subscribers in member order each take a contiguous run of partitions; the first
``partitions % subscribers`` take one extra. Worked example: members C0, C1 both subscribe to t0 and t1, each with
three partitions::

    C0: [t0p0, t0p1, t1p0, t1p1]
    C1: [t0p2, t1p2]

With rack awareness (KIP-881), partitions with a replica in a member's rack go to that member first, within the same
per-member counts, so the balance is unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from groupcoord.assignors.base import Assignor
from groupcoord.assignors.fill import fill
from groupcoord.assignors.prepare import Prepared
from groupcoord.assignors.schema import GROUP


@dataclass(frozen=True, kw_only=True)
class RangeAssignor(Assignor):
    """Kafka's range assignor; ``rack_aware`` enables the KIP-881 same-rack preference."""

    name: ClassVar[str] = "range"
    rack_aware: bool = True

    def _assign(self, prepared: Prepared) -> DataFrame:
        scope = [GROUP, "topic"]
        counts = prepared.partitions.groupBy(*scope).agg(F.count(F.lit(1)).alias("_p"))
        slots = prepared.subscriptions.join(counts, scope).select(
            *scope,
            "member_id",
            F.col("sub_index").alias("rank"),
            "rack",
            (
                F.floor(F.col("_p") / F.col("n_subs"))
                + F.when(F.col("sub_index") < F.col("_p") % F.col("n_subs"), 1).otherwise(0)
            ).alias("deficit"),
        )
        return fill(scope, prepared.partitions, slots, rack_aware=self.rack_aware and prepared.has_racks)
