"""FindCoordinator: this endpoint coordinates every group; batched lookups (v4+) are answered key by key.

Where the endpoint serves InitProducerId it also answers for transactional ids (key type 1) with itself, as a Kafka
broker does: a transactional producer then learns from InitProducerId that its transactional id is refused
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED: there is no transaction coordinator), the answer Kafka gives where ACLs allow
no transactional id.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafka.protocol.metadata import FindCoordinatorResponse

from groupcoord.protocol.errors import ErrorCode, Errors
from groupcoord.server.api import RequestContext

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1
_NO_NODE = -1


def _always_available() -> ErrorCode:
    return Errors.NONE


class FindCoordinatorAdapter:
    """Points group keys (and, with ``transactions``, transactional ids) at this endpoint.

    ``availability()`` returns the error to answer instead (``Errors.NONE`` when serving); the runtime uses it to
    answer COORDINATOR_NOT_AVAILABLE while loading or standing by. Other key types get INVALID_REQUEST.
    """

    def __init__(self, *, availability: Callable[[], ErrorCode] = _always_available,
                 transactions: bool = False) -> None:
        self._availability = availability
        self._key_types = {GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE} if transactions else {GROUP_KEY_TYPE}

    async def handle(self, ctx: RequestContext) -> Any:
        """Answer each requested key."""
        error = self._availability()
        if ctx.body.key_type not in self._key_types:
            error = Errors.INVALID_REQUEST
        return self._answer(ctx, error)

    def error_response(self, ctx: RequestContext, error: ErrorCode) -> Any:
        """``error`` for every requested key."""
        return self._answer(ctx, error)

    @staticmethod
    def _answer(ctx: RequestContext, error: ErrorCode) -> Any:
        broker = ctx.broker
        node, host, port = (broker.node_id, broker.host, broker.port) if error is Errors.NONE else (_NO_NODE, "", -1)
        if ctx.api_version < 4:
            return ctx.response(
                throttle_time_ms=0, error_code=error.code, error_message=None, node_id=node, host=host, port=port
            )
        coordinators = [
            FindCoordinatorResponse.Coordinator(
                key=key, node_id=node, host=host, port=port, error_code=error.code, error_message=None
            )
            for key in ctx.body.coordinator_keys
        ]
        return ctx.response(throttle_time_ms=0, coordinators=coordinators)
