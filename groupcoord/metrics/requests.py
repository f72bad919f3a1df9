"""Request rates and latencies per Kafka API: the dispatcher's handlers, each timed by a thin wrapper.

The host wraps the dispatcher it builds (:func:`metered`) before handing it to the endpoint, so neither the endpoint
nor an adapter changes. A wrapped request costs two ``perf_counter`` calls and one bucket increment
(:class:`~groupcoord.metrics.loop_instruments.LoopHistogram`); its latency is from the adapter's start to its
response, which for a write includes the record log's commit (an OffsetCommit is answered once durable). The
``api`` label is Kafka's request name (``JoinGroup``, ``OffsetCommit``, ``Produce``...); the rate of an API is the
rate of its histogram's ``_count``.

The SASL APIs are left unwrapped: they belong to the connection's authentication, not to the coordinator's work.
"""

from __future__ import annotations

import time
from typing import Any

from groupcoord.metrics.loop_instruments import HistogramSeries, LoopHistogram
from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.api import ApiHandler, Dispatcher, RequestContext
from groupcoord.server.versions import ApiKey


def api_name(key: int) -> str:
    """Kafka's name of API ``key`` (``JoinGroup`` for 11); ``Api<key>`` for a key this endpoint does not know."""
    try:
        return "".join(word.capitalize() for word in ApiKey(key).name.split("_"))
    except ValueError:
        return f"Api{key}"


class MeteredHandler:
    """An :class:`~groupcoord.server.api.ApiHandler` whose requests are timed into one histogram series."""

    def __init__(self, handler: ApiHandler, series: HistogramSeries) -> None:
        self.handler = handler
        self._series = series

    async def handle(self, ctx: RequestContext) -> Any:
        """The wrapped handler's answer, timed."""
        started = time.perf_counter()
        try:
            return await self.handler.handle(ctx)
        finally:
            self._series.observe(time.perf_counter() - started)

    def error_response(self, ctx: RequestContext, error: ErrorCode) -> Any:
        """The wrapped handler's error response."""
        return self.handler.error_response(ctx, error)


def metered(dispatcher: Dispatcher, histogram: LoopHistogram) -> dict[ApiKey, ApiHandler]:
    """``dispatcher`` with every handler but SASL's timed into ``histogram`` (label: :func:`api_name`)."""
    return {key: handler if api_name(key).startswith("Sasl")
            else MeteredHandler(handler, histogram.child(api_name(key)))
            for key, handler in dispatcher.items()}
