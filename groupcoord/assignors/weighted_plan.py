"""``weighted``: balances the sum of partition weights (lag, bytes per second), not partition counts.

Per scope (see :mod:`groupcoord.assignors.scopes`) with total weight ``W`` over ``n`` members, ``mean = W / n``:

1. *Keep*: each member keeps its owned partitions, in (topic, partition) order, while its kept weight stays within
   ``min(mean * (1 + tolerance), mean + max weight)``; small weight changes therefore move nothing.
2. *Level*: the free weight ``R`` fills members up to a common water level ``T`` (``sum(max(0, T - kept)) = R``,
   found with one sorted window); ``T <= mean``.
3. *Place*: members' free capacities ``T - kept`` are laid end to end and each free partition goes to the member
   whose interval holds the partition's starting offset (running weight sum), so a member gets at most its capacity
   plus one partition: every load stays within ``mean + max weight``.

Worked example: weights t0p0=6, t0p1=1, t0p2=1, t0p3=4, members C0, C1, nothing owned (mean 6)::

    C0: [t0p0]                 (6)
    C1: [t0p1, t0p2, t0p3]     (6)

The plan is one SQL text (:mod:`groupcoord.plans.sql`): one py4j call, where DataFrame calls take one each.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pyspark.sql import DataFrame

from groupcoord.assignors.base import Assignor
from groupcoord.assignors.prepare import Prepared
from groupcoord.assignors.scopes import scoped
from groupcoord.plans.sql import query

_RUNNING = "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"

_LIMITS = (
    "limits AS (SELECT _g, _s, _w, _n, least(_w / _n * {keep_factor}, _w / _n + _wmax) AS _limit FROM ("
    "SELECT _g, _s, sum(weight) AS _w, max(weight) AS _wmax FROM {partitions} GROUP BY _g, _s) "
    "JOIN (SELECT _g, _s, count(1) AS _n FROM {members} GROUP BY _g, _s) USING (_g, _s))"
)
"""Per scope: total weight ``_w``, member count ``_n`` and the most a member may keep, ``_limit``."""

_FRESH = (
    "SELECT _g, _owner AS member_id, topic, partition FROM ("
    "SELECT *, last(member_id, true) OVER (PARTITION BY _g, _s ORDER BY _at, _kind, _open, rank, topic, partition "
    + _RUNNING + ") AS _owner FROM ("
    "SELECT *, sum(_len) OVER (PARTITION BY _g, _s, _kind ORDER BY rank, topic, partition " + _RUNNING + ") - _len "
    "AS _at, _kind = 1 OR _len > 0 AS _open FROM ("
    "SELECT *, CASE WHEN _kind = 0 THEN greatest(sum(weight) OVER w / count(member_id) OVER w, 0.0D) ELSE weight END "
    "AS _len FROM (SELECT _g, _s, 0 AS _kind, rank, member_id, CAST(NULL AS string) AS topic, "
    "CAST(NULL AS int) AS partition, CAST(NULL AS double) AS weight FROM {members} "
    "UNION ALL SELECT _g, _s, 1, 0, NULL, topic, partition, weight FROM {partitions}) "
    "WINDOW w AS (PARTITION BY _g, _s)))) WHERE _kind = 1"
)
"""Nothing owned: every member's capacity is the mean, and the whole plan is windows over one timeline of members
and partitions (no join: the joins of per-scope aggregates cost a small group two more stages)."""

_KEEP = (
    "kept AS (SELECT _g, _s, member_id, topic, partition, weight FROM ("
    "SELECT *, sum(weight) OVER (PARTITION BY _g, _s, member_id ORDER BY topic, partition " + _RUNNING + ") AS _cum "
    "FROM {owned} JOIN limits USING (_g, _s)) WHERE _cum <= _limit), "
    "loads AS (SELECT _g, _s, member_id, rank, coalesce(_kept, 0.0D) AS _kept, _w FROM {members} "
    "LEFT JOIN (SELECT _g, _s, member_id, sum(weight) AS _kept FROM kept GROUP BY _g, _s, member_id) "
    "USING (_g, _s, member_id) JOIN (SELECT _g, _s, _w FROM limits) USING (_g, _s)), "
    # Water level: with kept loads sorted ascending k_1..k_n and prefix sums s_j, the level is (R + s_j) / j for
    # the largest j whose k_j lies below it.
    "levels AS (SELECT _g, _s, max_by(_t, _j) AS _level FROM ("
    "SELECT *, (_w - sum(_kept) OVER (PARTITION BY _g, _s) + sum(_kept) OVER (PARTITION BY _g, _s "
    "ORDER BY _kept, rank " + _RUNNING + ")) / row_number() OVER (PARTITION BY _g, _s ORDER BY _kept, rank) AS _t, "
    "row_number() OVER (PARTITION BY _g, _s ORDER BY _kept, rank) AS _j FROM loads) WHERE _kept <= _t "
    "GROUP BY _g, _s), "
    "free AS (SELECT * FROM {partitions} LEFT ANTI JOIN kept USING (_g, _s, topic, partition))"
)
"""Owned partitions kept within the limit, each member's kept load, the water level and the partitions left."""

_PLACE = (
    "starts AS (SELECT _g, _s, _at, 0 AS _kind, _cap > 0 AS _open, rank, member_id, "
    "CAST(NULL AS string) AS topic, CAST(NULL AS int) AS partition FROM ("
    "SELECT *, sum(_cap) OVER (PARTITION BY _g, _s ORDER BY rank " + _RUNNING + ") - _cap AS _at FROM ("
    "SELECT *, greatest(_level - _kept, 0.0D) AS _cap FROM loads JOIN levels USING (_g, _s)))), "
    "offsets AS (SELECT _g, _s, sum(weight) OVER (PARTITION BY _g, _s ORDER BY topic, partition " + _RUNNING + ") "
    "- weight AS _at, 1 AS _kind, true AS _open, 0 AS rank, CAST(NULL AS string) AS member_id, topic, partition "
    "FROM free), "
    # Members sort before partitions at the same offset, and open (positive-capacity) members last among members.
    "placed AS (SELECT _g, _owner AS member_id, topic, partition FROM ("
    "SELECT *, last(member_id, true) OVER (PARTITION BY _g, _s ORDER BY _at, _kind, _open, rank, topic, partition "
    + _RUNNING + ") AS _owner FROM (SELECT * FROM starts UNION ALL SELECT * FROM offsets)) WHERE _kind = 1)"
)
"""Capacities laid end to end, partitions at their running weight offsets, and each partition's owner."""


@dataclass(frozen=True, kw_only=True)
class WeightedAssignor(Assignor):
    """The weighted assignor; ``tolerance`` is the fraction above the mean load a member may keep owned weight."""

    name: ClassVar[str] = "weighted"
    tolerance: float = 0.1

    def __post_init__(self) -> None:
        if not self.tolerance >= 0:
            raise ValueError(f"tolerance must be >= 0, got {self.tolerance}")

    def _plan(self, prepared: Prepared) -> DataFrame:
        frames = scoped(prepared)
        if frames.owned is None:
            return query(_FRESH, members=frames.members, partitions=frames.partitions)
        # The factor as Python computes it, passed exactly (a double's repr reads back as the same double).
        limits = _LIMITS.replace("{keep_factor}", f"CAST('{1 + self.tolerance!r}' AS double)")
        return query(
            f"WITH {limits}, {_KEEP}, {_PLACE} "
            "SELECT * FROM placed UNION ALL SELECT _g, member_id, topic, partition FROM kept",
            members=frames.members, partitions=frames.partitions, owned=frames.owned,
        )
