"""Partition weights for server-side assignment: the offset checkpoint job's ``partition_weights`` table.

The checkpoint job (:mod:`groupcoord.admin.checkpoint`) writes ``weight = 1 + lag`` per (group, topic, partition),
with delta-spark, on protocol (1,2). The assignment runner reads it once per batched call with delta-rs into Arrow
(a small table read on the assignment path: no Spark job for it), keeps the newest row per partition,
and fills the ``weight`` column of the assignors' ``partitions`` input from it; a partition without a weight gets
1.0, so groups the job never saw are balanced by partition count. A missing table costs no Spark job and no error;
an unreadable one is logged and treated as empty, since stale balance is better than no assignment.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Collection, Mapping

import pyarrow.compute as pc
import pyarrow.dataset as ds
from deltalake.exceptions import DeltaError

from groupcoord.storage.tables import Where, open_if_exists, table_dataset

log = logging.getLogger("groupcoord.assignment.weights")

DEFAULT_WEIGHT = 1.0
"""The weight of a partition the checkpoint job has not measured (issue 4)."""

PartitionKey = tuple[str, str, int]
"""(group id, topic, partition)."""


def read_partition_weights(path: Where, group_ids: Collection[str]) -> dict[PartitionKey, float]:
    """The newest weight per (group, topic, partition) of ``group_ids`` in the weights table at ``path``.

    Empty when the table does not exist (or cannot be read). A partition whose newest weight is not a finite
    non-negative number is left out, so it falls back to :data:`DEFAULT_WEIGHT` instead of failing the assignment.
    """
    if not group_ids:
        return {}
    try:
        table = open_if_exists(path)
        if table is None:
            return {}
        wanted = sorted(group_ids)
        rows = table_dataset(table).to_table(
            columns=["group_id", "topic", "partition", "weight", "updated_at"],
            filter=ds.field("group_id").isin(wanted),
        )
    except (DeltaError, OSError) as exc:
        log.warning("cannot read partition weights at %s (%s); assigning with weight %.1f", path, exc,
                    DEFAULT_WEIGHT)
        return {}
    # Ascending by time, so the newest row of a partition is the one left in the dict.
    ordered = rows.take(pc.sort_indices(rows, sort_keys=[("updated_at", "ascending")]))
    weights: dict[PartitionKey, float] = {}
    skipped = 0
    for row in ordered.to_pylist():
        key = (row["group_id"], row["topic"], row["partition"])
        weight = row["weight"]
        if weight is None or not math.isfinite(weight) or weight < 0:
            skipped += 1
            weights.pop(key, None)
            continue
        weights[key] = float(weight)
    if skipped:
        log.warning("ignored %d invalid partition weight(s) at %s", skipped, path)
    return weights


def weight_of(weights: Mapping[PartitionKey, float], group_id: str, topic: str, partition: int) -> float:
    """The weight of one partition for ``group_id``; :data:`DEFAULT_WEIGHT` when none was measured."""
    return weights.get((group_id, topic, partition), DEFAULT_WEIGHT)
