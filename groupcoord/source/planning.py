"""Pure planning of micro-batches: admission control and the split of offset ranges into Spark input partitions.

No I/O here: the source's driver side gathers ownership, positions and log bounds, and these functions decide.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping

from kafka.structs import TopicPartition

Ranges = Mapping[TopicPartition, tuple[int, int]]


def admit(ranges: Ranges, max_rows: int | None) -> dict[TopicPartition, int]:
    """The end offset of each range under a limit of ``max_rows`` records in all (Spark's ``maxOffsetsPerTrigger``).

    As Spark's Kafka source does, the limit is shared in proportion to each partition's backlog: a share below one
    record is rounded up (so every partition with a backlog moves), a larger one down.
    """
    total = sum(high - low for low, high in ranges.values())
    if max_rows is None or total <= max_rows:
        return {tp: high for tp, (low, high) in ranges.items()}
    admitted = {}
    for tp, (low, high) in ranges.items():
        share = max_rows * (high - low) / total
        rows = math.ceil(share) if share < 1 else math.floor(share)
        admitted[tp] = min(high, low + rows)
    return admitted


def split_ranges(ranges: Ranges, *, min_partitions: int | None = None,
                 max_records: int | None = None) -> list[tuple[TopicPartition, int, int]]:
    """Cut ``ranges`` into ``(partition, low, high)`` pieces for Spark's tasks, in partition order.

    One piece per partition by default; ``max_records`` (``maxRecordsPerPartition``) caps a piece's size, and
    ``min_partitions`` (``minPartitions``) cuts the larger ranges further, in proportion to their sizes, until there are
    at least that many pieces (as Spark's Kafka source's offset range calculator does).
    """
    sizes = {tp: high - low for tp, (low, high) in ranges.items() if high > low}
    pieces = {tp: math.ceil(size / max_records) if max_records else 1 for tp, size in sizes.items()}
    total = sum(sizes.values())
    if min_partitions and sum(pieces.values()) < min_partitions and total:
        for tp, size in sizes.items():
            pieces[tp] = max(pieces[tp], math.ceil(size * min_partitions / total))
    result: list[tuple[TopicPartition, int, int]] = []
    for tp in sorted(sizes):
        low, high = ranges[tp]
        count = min(pieces[tp], high - low)
        bounds = [low + (high - low) * i // count for i in range(count + 1)]
        result.extend((tp, a, b) for a, b in itertools.pairwise(bounds) if b > a)
    return result
