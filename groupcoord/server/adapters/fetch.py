"""Fetch v4-v12 over the embedded topic log: record batches v2 in the codec each record was produced in, with their
headers and timestamp type (:mod:`groupcoord.server.record_batches`).

No fetch sessions (KIP-227) are created: every response has session id 0 and lists every requested partition, which
tells clients to keep sending full fetch requests. A request naming a session gets FETCH_SESSION_ID_NOT_FOUND.
Long polling follows ``max_wait_ms`` / ``min_bytes``: with nothing to return the adapter re-reads the log every
``poll_interval_ms`` until data arrives or the wait is over.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafka.protocol.consumer import FetchResponse

from groupcoord.protocol.errors import ErrorCode, Errors
from groupcoord.server.api import RequestContext
from groupcoord.server.record_batches import BatchRejected, FetchRows, build_fetch_batches
from groupcoord.server.topic_data import TopicReader
from groupcoord.topics.errors import TopicError
from groupcoord.topics.topic_log import PartitionOffsets

_NO_SESSION = 0
_NONE = -1

_Topic = FetchResponse.FetchableTopicResponse
_Partition = _Topic.PartitionData


@dataclass(frozen=True, kw_only=True)
class FetchLimits:
    """How the fetch adapter reads: records per partition per read, and how often a long poll re-reads."""

    max_records_per_partition: int = 10_000
    poll_interval_ms: int = 100


class FetchAdapter:
    """Answers Fetch from a :class:`TopicReader`; reads run off the event loop."""

    def __init__(self, reader: TopicReader, *, limits: FetchLimits | None = None) -> None:
        self._reader = reader
        self._limits = limits or FetchLimits()

    async def handle(self, ctx: RequestContext) -> Any:
        """Return data as soon as there is any (or ``min_bytes`` of it), an error, or the wait is over."""
        body = ctx.body
        if ctx.api_version >= 7 and body.session_id != _NO_SESSION:
            return ctx.response(throttle_time_ms=0, error_code=Errors.FETCH_SESSION_ID_NOT_FOUND.code,
                                session_id=_NO_SESSION, responses=[])
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(body.max_wait_ms, 0) / 1000
        wanted = max(body.min_bytes, 1)
        while True:
            response, size, failed = await asyncio.to_thread(self._fetch_once, ctx)
            remaining = deadline - loop.time()
            if size >= wanted or failed or remaining <= 0:
                return response
            await asyncio.sleep(min(remaining, self._limits.poll_interval_ms / 1000))

    def error_response(self, ctx: RequestContext, error: ErrorCode) -> Any:
        """``error`` for every requested partition."""
        return self._response(ctx, {
            t.topic: [_partition(p.partition, error.code) for p in t.partitions] for t in ctx.body.topics
        })

    def _response(self, ctx: RequestContext, partitions: Mapping[str, list[Any]]) -> Any:
        return ctx.response(
            throttle_time_ms=0,
            error_code=Errors.NONE.code,
            session_id=_NO_SESSION,
            responses=[_Topic(topic=name, partitions=parts) for name, parts in partitions.items()],
        )

    def _fetch_once(self, ctx: RequestContext) -> tuple[Any, int, bool]:
        """One pass over the requested partitions: (response, record bytes, whether any partition failed)."""
        body = ctx.body
        budget = body.max_bytes if ctx.api_version >= 3 else 2**31 - 1
        size, failed = 0, False
        answered: dict[str, list[Any]] = {}
        for topic in body.topics:
            try:
                offsets: Mapping[int, PartitionOffsets] = self._reader.offsets(topic.topic)
                topic_error = Errors.UNKNOWN_TOPIC_OR_PARTITION.code
            except TopicError as exc:
                offsets, topic_error = {}, exc.error_code
            parts = answered.setdefault(topic.topic, [])
            for p in topic.partitions:
                bounds = offsets.get(p.partition)
                if bounds is None:
                    parts.append(_partition(p.partition, topic_error))
                    failed = True
                    continue
                if not bounds.start <= p.fetch_offset <= bounds.end:
                    parts.append(_partition(p.partition, Errors.OFFSET_OUT_OF_RANGE.code, bounds))
                    failed = True
                    continue
                # The first non-empty partition always gets at least one record, whatever the limits (KIP-74).
                limit = min(p.partition_max_bytes, budget) if size else p.partition_max_bytes
                records = b""
                if p.fetch_offset < bounds.end and limit > 0:
                    try:
                        records = self._records(topic.topic, p.partition, p.fetch_offset, limit, ctx.api_version)
                    except BatchRejected as exc:
                        parts.append(_partition(p.partition, exc.error.code, bounds))
                        failed = True
                        continue
                size += len(records)
                budget -= len(records)
                parts.append(_partition(p.partition, Errors.NONE.code, bounds, records))
        return self._response(ctx, answered), size, failed

    def _records(self, topic: str, partition: int, offset: int, limit: int, api_version: int) -> bytes:
        """Record batches of ``topic``-``partition`` from ``offset``, at most ``limit`` bytes unless the first record
        alone is larger."""
        try:
            rows = self._reader.read(topic, partition, offset, self._limits.max_records_per_partition)
        except TopicError:
            return b""  # the log moved between reading its bounds and its records; the next fetch sees it
        return build_fetch_batches(FetchRows.from_table(rows), limit, api_version=api_version)


def _partition(index: int, error_code: int, bounds: PartitionOffsets | None = None, records: bytes | None = None
               ) -> Any:
    end = bounds.end if bounds is not None else _NONE
    return _Partition(
        partition_index=index,
        error_code=error_code,
        high_watermark=end,
        last_stable_offset=end,
        log_start_offset=bounds.start if bounds is not None else _NONE,
        aborted_transactions=None,
        preferred_read_replica=_NONE,
        records=records,
    )
