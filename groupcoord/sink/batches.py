"""Which offsets of which partitions a batch of the query's ``groupcoord`` source covers, read from Spark's checkpoint.

The sink needs each partition's range, not only the offsets of the rows it receives: a transformation may drop
rows, and Kafka's offsets are not dense (transaction markers, compaction), so neither the first nor the last row
says where the batch starts or ends. Spark writes the source's end offset of batch ``N`` to
``<checkpoint>/offsets/N`` before it runs the batch (its write-ahead log), and batch ``N``'s start is the end of
batch ``N - 1``. The source's offset codec turns the two into ranges (:mod:`groupcoord.sink.group_commit`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from groupcoord.sink.plan import BatchRange, TopicPartitionKey
from groupcoord.storage.location import TableLocation
from groupcoord.storage.tables import table_filesystem


class SourceBatchError(RuntimeError):
    """The checkpoint holds no ``groupcoord`` source offset for the batch (a sink without a groupcoord source)."""


@dataclass(frozen=True)
class SourceBatch:
    """One batch of the query's groupcoord source: its group, the range of every partition it read, and the source's
    end offset as Spark checkpointed it (the group commit's fencing reads the owner and generation from it).
    ``jumps``: the partitions whose range starts past offsets that retention removed (the source's
    ``failOnDataLoss`` false), and that start."""

    group_id: str
    ranges: Mapping[TopicPartitionKey, BatchRange]
    end: Mapping[str, Any]
    jumps: Mapping[TopicPartitionKey, int] = field(default_factory=dict)


BatchCodec = Callable[[Mapping[str, Any] | None, Mapping[str, Any]], SourceBatch | None]
"""``(previous end offset or None, end offset) -> SourceBatch``, or ``None`` for an offset of another source."""


def read_source_batch(checkpoint: TableLocation, batch_id: int, codec: BatchCodec) -> SourceBatch:
    """The groupcoord source's batch ``batch_id`` from the checkpoint's offset log (a local directory or S3)."""
    current = _source_offsets(checkpoint, batch_id)
    if current is None:
        raise SourceBatchError(f"groupcoord-delta: no offsets of batch {batch_id} in the checkpoint {checkpoint} "
                               f"(is checkpointLocation the query's checkpoint?)")
    previous = _source_offsets(checkpoint, batch_id - 1) if batch_id > 0 else None
    for index, end in enumerate(current):
        before = previous[index] if previous is not None and index < len(previous) else None
        if end is None:
            continue
        batch = codec(before, end)
        if batch is not None:
            return batch
    raise SourceBatchError("groupcoord-delta: the query has no readStream.format('groupcoord') source; the sink "
                           "writes exactly once only what a groupcoord source read (use format('delta') otherwise)")


def offset_log_entry(checkpoint: TableLocation, batch_id: int) -> str | None:
    """The text of Spark's offset log entry ``<checkpoint>/offsets/<batch_id>``; ``None`` when there is none."""
    try:
        with table_filesystem(checkpoint).open_input_stream(f"offsets/{batch_id}") as entry:
            return bytes(entry.read()).decode("utf-8")
    except FileNotFoundError:
        return None


def _source_offsets(checkpoint: TableLocation, batch_id: int) -> list[dict[str, Any] | None] | None:
    """The source offsets of one entry of Spark's offset log (``v1``, the batch metadata, one line per source)."""
    text = offset_log_entry(checkpoint, batch_id)
    if text is None:
        return None
    lines = text.splitlines()
    offsets: list[dict[str, Any] | None] = []
    for line in lines[2:]:
        parsed = json.loads(line) if line.strip() not in ("", "-") else None
        offsets.append(parsed if isinstance(parsed, dict) else None)
    return offsets
