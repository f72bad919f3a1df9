"""``range``: Kafka's ``RangeAssignor``, topic by topic, as one window-and-join plan.

For each topic, the subscribers in member order each take a contiguous run of partitions; the first
``partitions % subscribers`` take one extra. Worked example: members C0, C1 both subscribe to t0 and t1, each with
three partitions::

    C0: [t0p0, t0p1, t1p0, t1p1]
    C1: [t0p2, t1p2]

With rack awareness (KIP-881), partitions with a replica in a member's rack go to that member first, within the same
per-member counts, so the balance is unchanged.

When every member of a group is proven to subscribe to the same topics (``Prepared.homogeneous``) and no rack is in
play, the runs are arithmetic on a partition's index ``i`` within its topic (``c`` partitions, ``n`` members,
``q = c div n``, ``r = c mod n``): the first ``r`` members take ``q + 1`` each, so ``i`` goes to member rank
``i div (q + 1)`` below ``r (q + 1)`` and ``r + (i - r (q + 1)) div q`` above. One window and one join, with no row
per member and topic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from groupcoord.assignors.base import Assignor
from groupcoord.assignors.fill_plan import fill
from groupcoord.assignors.prepare import Prepared
from groupcoord.assignors.schema import GROUP
from groupcoord.plans.sql import query

_HOMOGENEOUS_SQL = (
    "SELECT p._g, m.member_id, p.topic, p.partition FROM ("
    "SELECT _g, topic, partition, CAST(n_subs AS int) AS n, "
    "CAST(row_number() OVER (PARTITION BY _g, topic ORDER BY partition) - 1 AS int) AS i, "
    "CAST(count(1) OVER (PARTITION BY _g, topic) AS int) AS c FROM {partitions}) p "
    "JOIN {members} m ON m._g = p._g AND m.rank = CASE WHEN p.i < (p.c % p.n) * (p.c DIV p.n + 1) "
    "THEN p.i DIV (p.c DIV p.n + 1) ELSE p.c % p.n + (p.i - (p.c % p.n) * (p.c DIV p.n + 1)) DIV (p.c DIV p.n) END"
)
"""Range for proven-homogeneous groups without racks (see the module docstring); ``q = 0`` never reaches the
``ELSE`` branch (every index is below ``r = c``), so nothing divides by zero."""


@dataclass(frozen=True, kw_only=True)
class RangeAssignor(Assignor):
    """Kafka's range assignor; ``rack_aware`` enables the KIP-881 same-rack preference."""

    name: ClassVar[str] = "range"
    rack_aware: bool = True

    def _plan(self, prepared: Prepared) -> DataFrame:
        rack_aware = self.rack_aware and prepared.has_racks
        if prepared.homogeneous and not rack_aware:
            return query(_HOMOGENEOUS_SQL, partitions=prepared.partitions, members=prepared.members)
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
        return fill(scope, prepared.partitions, slots, rack_aware=rack_aware)
