"""ListOffsets v1-v11 over the embedded topic log: earliest, latest, max-timestamp and by-timestamp lookups.

The special timestamps of tiered storage (v8+) answer as a Kafka broker without it does: the earliest local offset
(-4) is the earliest offset, and the latest tiered (-5) and earliest pending upload (-6) offsets are -1 (nothing is
tiered).
"""

from __future__ import annotations

import asyncio
from typing import Any

from kafka.protocol.consumer import ListOffsetsResponse

from groupcoord.protocol.errors import ErrorCode, Errors
from groupcoord.server.api import RequestContext
from groupcoord.server.topic_data import TopicReader
from groupcoord.topics.errors import TopicError
from groupcoord.topics.topic_log import PartitionOffsets, TopicRecord

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL = -4
LATEST_TIERED = -5
EARLIEST_PENDING_UPLOAD = -6
_NONE = -1
_SCAN_CHUNK = 5000

_Topic = ListOffsetsResponse.ListOffsetsTopicResponse
_Partition = _Topic.ListOffsetsPartitionResponse


class ListOffsetsAdapter:
    """Answers ListOffsets from a :class:`TopicReader`, off the event loop.

    A timestamp lookup scans the partition for the first record at or after the timestamp (the embedded log keeps no
    time index); no such record gives offset -1, as in Kafka.
    """

    def __init__(self, reader: TopicReader) -> None:
        self._reader = reader

    async def handle(self, ctx: RequestContext) -> Any:
        """Look every requested partition up."""
        return await asyncio.to_thread(self._answer, ctx)

    def error_response(self, ctx: RequestContext, error: ErrorCode) -> Any:
        """``error`` for every requested partition."""
        return ctx.response(
            throttle_time_ms=0,
            topics=[
                _Topic(name=t.name, partitions=[_Partition(partition_index=p.partition_index, error_code=error.code,
                                                           timestamp=_NONE, offset=_NONE, leader_epoch=_NONE)
                                                for p in t.partitions])
                for t in ctx.body.topics
            ],
        )

    def _answer(self, ctx: RequestContext) -> Any:
        topics = []
        for topic in ctx.body.topics:
            try:
                offsets = self._reader.offsets(topic.name)
            except TopicError as exc:
                offsets, error = {}, exc.error_code
            else:
                error = Errors.UNKNOWN_TOPIC_OR_PARTITION.code
            partitions = []
            for p in topic.partitions:
                bounds = offsets.get(p.partition_index)
                if bounds is None:
                    code, timestamp, offset = error, _NONE, _NONE
                else:
                    code, timestamp, offset = self._lookup(topic.name, p.partition_index, bounds, p.timestamp)
                partitions.append(_Partition(partition_index=p.partition_index, error_code=code,
                                             timestamp=timestamp, offset=offset, leader_epoch=_NONE))
            topics.append(_Topic(name=topic.name, partitions=partitions))
        return ctx.response(throttle_time_ms=0, topics=topics)

    def _lookup(self, topic: str, partition: int, bounds: PartitionOffsets, timestamp: int) -> tuple[int, int, int]:
        """``(error code, timestamp, offset)`` for one partition."""
        if timestamp == LATEST:
            return Errors.NONE.code, _NONE, bounds.end
        if timestamp in (EARLIEST, EARLIEST_LOCAL):
            return Errors.NONE.code, _NONE, bounds.start
        if timestamp in (LATEST_TIERED, EARLIEST_PENDING_UPLOAD):
            return Errors.NONE.code, _NONE, _NONE
        best: tuple[int, int] | None = None  # (timestamp, offset)
        offset = bounds.start
        while offset < bounds.end:
            try:
                records = TopicRecord.from_table(self._reader.read(topic, partition, offset, _SCAN_CHUNK))
            except TopicError as exc:
                return exc.error_code, _NONE, _NONE
            if not records:
                break
            for record in records:
                record_ms = int(record.timestamp.timestamp() * 1000)
                if timestamp == MAX_TIMESTAMP:
                    if best is None or record_ms > best[0]:
                        best = (record_ms, record.offset)
                elif record_ms >= timestamp:
                    return Errors.NONE.code, record_ms, record.offset
            offset = records[-1].offset + 1
        if best is None:
            return Errors.NONE.code, _NONE, _NONE
        return Errors.NONE.code, best[0], best[1]
