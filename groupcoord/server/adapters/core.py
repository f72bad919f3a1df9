"""The generic adapter for APIs the core answers: map the wire request to core requests, submit, map back.

Each API provides a :class:`CoreMapping`. A wire request may become several core requests (batched forms such as
OffsetFetch v8+ with several groups); they are submitted together and each outcome is either the core's response
or the :class:`ErrorCode` it failed with, so one failing group does not fail the others.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Protocol

from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.requests import GroupRequest
from groupcoord.runtime.service import CoordinatorService, RequestFailed
from groupcoord.server.api import RequestContext

Outcome = Any  # a core response (groupcoord.protocol.responses) or the ErrorCode the request failed with


class CoreMapping(Protocol):
    """How one API maps between kafka-python objects and the core's frozen types."""

    def to_core(self, ctx: RequestContext) -> Sequence[GroupRequest]:
        """The core requests for ``ctx.body``."""

    def to_wire(self, ctx: RequestContext, requests: Sequence[GroupRequest], outcomes: Sequence[Outcome]) -> Any:
        """The wire response for the outcomes of ``requests`` (same order), at ``ctx.api_version``."""


class CoreAdapter:
    """Answers one API through a :class:`CoordinatorService`."""

    def __init__(self, service: CoordinatorService, mapping: CoreMapping) -> None:
        self._service = service
        self._mapping = mapping

    async def handle(self, ctx: RequestContext) -> Any:
        """Submit the mapped requests and map their outcomes back."""
        requests = self._mapping.to_core(ctx)
        return self._mapping.to_wire(ctx, requests, await self.submit_all(requests))

    async def submit_all(self, requests: Sequence[GroupRequest]) -> Sequence[Outcome]:
        """The outcome of each of ``requests`` (submitted together), in order."""
        if len(requests) == 1:
            return [await self._submit(requests[0])]
        return await asyncio.gather(*(self._submit(request) for request in requests))

    def error_response(self, ctx: RequestContext, error: ErrorCode) -> Any:
        """``error`` for every mapped request."""
        requests = self._mapping.to_core(ctx)
        return self._mapping.to_wire(ctx, requests, [error] * len(requests))

    async def _submit(self, request: GroupRequest) -> Outcome:
        try:
            return await self._service.submit(request)
        except RequestFailed as exc:
            return exc.error
