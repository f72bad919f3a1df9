"""Fetch v4-v12 (served through Kafka's schemas: its request and response are the schema codec's dicts) over the
embedded topic log: record batches v2 in the codec each record was produced in, with their
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

from groupcoord.protocol.errors import ErrorCode, Errors
from groupcoord.server.api import RequestContext
from groupcoord.server.record_batches import BatchRejected, FetchRows, build_fetch_batches
from groupcoord.server.topic_data import TopicReader
from groupcoord.topics.errors import TopicError
from groupcoord.topics.topic_log import PartitionOffsets

_NO_SESSION = 0
_NONE = -1


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
        if ctx.api_version >= 7 and body["SessionId"] != _NO_SESSION:
            return ctx.response(ThrottleTimeMs=0, ErrorCode=Errors.FETCH_SESSION_ID_NOT_FOUND.code,
                                SessionId=_NO_SESSION, Responses=[])
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(body["MaxWaitMs"], 0) / 1000
        wanted = max(body["MinBytes"], 1)
        while True:
            response, size, failed = await asyncio.to_thread(self._fetch_once, ctx)
            remaining = deadline - loop.time()
            if size >= wanted or failed or remaining <= 0:
                return response
            await asyncio.sleep(min(remaining, self._limits.poll_interval_ms / 1000))

    def error_response(self, ctx: RequestContext, error: ErrorCode) -> Any:
        """``error`` for every requested partition."""
        return self._response(ctx, {
            t["Topic"]: [_partition(p["Partition"], error.code) for p in t["Partitions"]] for t in ctx.body["Topics"]
        })

    def _response(self, ctx: RequestContext, partitions: Mapping[str, list[dict[str, Any]]]) -> Any:
        return ctx.response(
            ThrottleTimeMs=0,
            ErrorCode=Errors.NONE.code,
            SessionId=_NO_SESSION,
            Responses=[{"Topic": name, "Partitions": parts} for name, parts in partitions.items()],
        )

    def _fetch_once(self, ctx: RequestContext) -> tuple[Any, int, bool]:
        """One pass over the requested partitions: (response, record bytes, whether any partition failed)."""
        body = ctx.body
        budget = body["MaxBytes"] if ctx.api_version >= 3 else 2**31 - 1
        size, failed = 0, False
        answered: dict[str, list[dict[str, Any]]] = {}
        for topic in body["Topics"]:
            name = topic["Topic"]
            try:
                offsets: Mapping[int, PartitionOffsets] = self._reader.offsets(name)
                topic_error = Errors.UNKNOWN_TOPIC_OR_PARTITION.code
            except TopicError as exc:
                offsets, topic_error = {}, exc.error_code
            parts = answered.setdefault(name, [])
            for p in topic["Partitions"]:
                partition, fetch_offset = p["Partition"], p["FetchOffset"]
                bounds = offsets.get(partition)
                if bounds is None:
                    parts.append(_partition(partition, topic_error))
                    failed = True
                    continue
                if not bounds.start <= fetch_offset <= bounds.end:
                    parts.append(_partition(partition, Errors.OFFSET_OUT_OF_RANGE.code, bounds))
                    failed = True
                    continue
                # The first non-empty partition always gets at least one record, whatever the limits (KIP-74).
                limit = min(p["PartitionMaxBytes"], budget) if size else p["PartitionMaxBytes"]
                records = b""
                if fetch_offset < bounds.end and limit > 0:
                    try:
                        records = self._records(name, partition, fetch_offset, limit, ctx.api_version)
                    except BatchRejected as exc:
                        parts.append(_partition(partition, exc.error.code, bounds))
                        failed = True
                        continue
                size += len(records)
                budget -= len(records)
                parts.append(_partition(partition, Errors.NONE.code, bounds, records))
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
               ) -> dict[str, Any]:
    end = bounds.end if bounds is not None else _NONE
    return {
        "PartitionIndex": index,
        "ErrorCode": error_code,
        "HighWatermark": end,
        "LastStableOffset": end,
        "LogStartOffset": bounds.start if bounds is not None else _NONE,
        "AbortedTransactions": None,
        "PreferredReadReplica": _NONE,
        "Records": records,
    }
