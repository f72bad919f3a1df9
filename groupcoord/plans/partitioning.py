"""One shuffle per input: every assignor frame is hash-partitioned by the group column ``_g``, once.

Every window and join in the assignors is keyed by a superset of ``_g``. Spark accepts a hash partitioning on a
subset of the clustering keys as satisfying it, and two sides partitioned by ``_g`` into the same number of
partitions as compatible for a join; so after this one exchange per input, the whole plan runs without another
shuffle: one result stage after three small map stages, whatever the number of windows.

The exchange is not a ``repartition``: Spark plans ``repartition(1, ...)`` as ``SinglePartition``, and a join of
two ``SinglePartition`` sides is re-shuffled (a single partition cannot be used to shuffle the other side), two
stages per join. Instead each input's first window is partitioned by the group alone and planned with
``spark.sql.shuffle.partitions`` set to the partition count (:func:`groupcoord.plans.lineage.planning`): the
exchange Spark inserts for it is ``hashpartitioning(_g, n)``, co-partitioned with the other inputs even for ``n = 1``.

The number of partitions is decided from the plan, never from a count: a single group (no ``group_id``) is one
partition, and a batch gets one partition per ``_BYTES_PER_PARTITION`` of the optimiser's size estimate, capped by
the session's ``spark.sql.shuffle.partitions``.

Small inputs (at most :data:`SINGLE_TASK_BYTES` estimated, together: a group of a few thousand partitions) skip even
that exchange: each input is coalesced
into one partition, which Spark knows as ``SinglePartition``. That satisfies every window's and join's distribution
and stays compatible with any other single-partition side, unions included, so the whole assignment is one stage of
one task (a small group's call ran 4 to 7 stages, each a scheduling round trip of 40-80 ms here). Larger inputs keep
the hash exchange: Spark re-shuffles joins of single-partition sides past some size (at 6,000 partitions x 100
members, 100 KB estimated, a call took 3-4 stages again; at 5,000 x 50, 82 KB, one), and coalescing would also run
the work that produces the inputs (a scan, a generated range) on one core (1M x 2000 got 15% slower that way).
"""

from __future__ import annotations

import math

from pyspark.sql import DataFrame

from groupcoord.plans.facts import estimated_bytes as plan_estimated_bytes

_BYTES_PER_PARTITION = 8 * 1024 * 1024

SINGLE_TASK_BYTES = 64 * 1024
"""Inputs estimated at this many bytes or fewer run as one task with no exchange (see the module docstring)."""


UNKNOWN_BYTES = 2**63 - 1
"""The size taken when no estimate can be read (:func:`groupcoord.plans.estimated_bytes`): Spark's own
estimate of a source of unknown size, so such inputs take the hash-partitioned plan."""


def estimated_bytes(frame: DataFrame) -> int:
    """The optimiser's size estimate of ``frame`` in bytes (no job runs; unknown sources estimate very large)."""
    size = plan_estimated_bytes(frame)
    return UNKNOWN_BYTES if size is None else size


def single_task(size: int) -> bool:
    """Whether inputs of ``size`` estimated bytes run as one task with no exchange (see the module docstring)."""
    return size <= SINGLE_TASK_BYTES


def partition_count(frames: list[DataFrame], *, batched: bool, size: int) -> int:
    """How many partitions inputs of ``size`` estimated bytes are hashed into (1 for a single group)."""
    if not batched or single_task(size):
        return 1
    cap = int(frames[0].sparkSession.conf.get("spark.sql.shuffle.partitions") or "200")
    return max(1, min(cap, math.ceil(size / _BYTES_PER_PARTITION)))
