"""Records to append as columns: the form a produced batch travels in from the wire to the topic log's Arrow rows,
with no Python object per record.

Produce decodes a partition's record batch straight into :class:`RecordColumns` (one list per field, timestamps as
epoch milliseconds); the appender hands the batches of one group commit to :meth:`TopicLog.append_columns
<groupcoord.topics.topic_log.TopicLog.append_columns>`, which numbers each batch's records from its partition's end
and builds every Arrow column once. :class:`~groupcoord.topics.topic_log.ProducerRecord` lists (the CLI, the Python
API) become columns in :meth:`TopicLog.produce <groupcoord.topics.topic_log.TopicLog.produce>`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

from groupcoord.topics.log_table import HEADER_TYPE, TOPIC_LOG_SCHEMA

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MILLISECOND = dt.timedelta(milliseconds=1)

Header = tuple[str, bytes | None]
"""One record header: its key and value."""


def datetime_to_millis(when: dt.datetime) -> int:
    """A UTC datetime as Kafka's milliseconds since the epoch (exact integer arithmetic)."""
    return (when - _EPOCH) // _MILLISECOND


@dataclass(frozen=True)
class RecordColumns:
    """Records as columns. A ``None`` timestamp means "stamp it with the commit's time" (LogAppendTime)."""

    keys: list[bytes | None]
    values: list[bytes | None]
    timestamps_ms: list[int | None]
    headers: list[Sequence[Header]]
    timestamp_types: list[int]
    compressions: list[str]

    def __len__(self) -> int:
        return len(self.values)

    @classmethod
    def concatenated(cls, parts: Sequence[RecordColumns]) -> RecordColumns:
        """``parts`` one after the other."""
        if len(parts) == 1:
            return parts[0]
        return cls(*([value for part in parts for value in getattr(part, name)]
                      for name in ("keys", "values", "timestamps_ms", "headers", "timestamp_types", "compressions")))


def log_rows(columns: RecordColumns, partitions: list[int], offsets: list[int], now_ms: int) -> pa.Table:
    """The topic log's rows of ``columns`` at ``partitions``/``offsets`` (one each per record); records without a
    timestamp get ``now_ms``."""
    count = len(columns)
    stamps = [now_ms if t is None else t for t in columns.timestamps_ms]
    header_lists = TOPIC_LOG_SCHEMA.field("headers").type
    if any(columns.headers):
        headers = pa.array([[{"key": k, "value": v} for k, v in h] for h in columns.headers], header_lists)
    else:  # the usual case: no record has headers; every list is empty
        headers = pa.ListArray.from_arrays(pa.array([0] * (count + 1), pa.int32()), pa.array([], HEADER_TYPE))
    return pa.table({
        "partition": pa.array(partitions, pa.int32()),
        "offset": pa.array(offsets, pa.int64()),
        "timestamp": pa.array(stamps, pa.timestamp("ms", tz="UTC")).cast(TOPIC_LOG_SCHEMA.field("timestamp").type),
        "key": pa.array(columns.keys, pa.binary()),
        "value": pa.array(columns.values, pa.binary()),
        "headers": headers.cast(header_lists),
        "timestamp_type": pa.array(columns.timestamp_types, pa.int32()),
        "compression": pa.array(columns.compressions, pa.string()),
    }, schema=TOPIC_LOG_SCHEMA)
