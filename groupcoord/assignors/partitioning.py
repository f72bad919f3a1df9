"""One shuffle per input: every assignor frame is hash-partitioned by the group column ``_g``, once.

Every window and join in the assignors is keyed by a superset of ``_g``. Spark accepts a hash partitioning on a
subset of the clustering keys as satisfying it, and two sides partitioned by ``_g`` into the same number of
partitions as compatible for a join; so after this one exchange per input, the whole plan runs without another
shuffle: one result stage after three small map stages, whatever the number of windows.

The number of partitions is decided from the plan, never from a count: a single group (no ``group_id``) is one
partition by construction, and a batch gets one partition per ``_BYTES_PER_PARTITION`` of the optimiser's size
estimate, capped by ``spark.sql.shuffle.partitions``.
"""

from __future__ import annotations

import math

from pyspark.sql import DataFrame

_BYTES_PER_PARTITION = 8 * 1024 * 1024


def estimated_bytes(frame: DataFrame) -> int:
    """The optimiser's size estimate of ``frame`` in bytes (no job runs; unknown sources estimate very large)."""
    size = frame._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()
    return size if isinstance(size, int) else int(size.toString())


def partition_count(frames: list[DataFrame], *, batched: bool) -> int:
    """How many partitions the inputs are hashed into: 1 for one group, else sized from the plan's estimate."""
    if not batched:
        return 1
    session = frames[0].sparkSession
    cap = int(session.conf.get("spark.sql.shuffle.partitions") or "200")
    size = sum(estimated_bytes(frame) for frame in frames)
    return max(1, min(cap, math.ceil(size / _BYTES_PER_PARTITION)))

