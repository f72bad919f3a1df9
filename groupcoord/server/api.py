"""What the endpoint hands to each API adapter, and what an adapter must provide."""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from groupcoord.protocol.errors import ErrorCode
from groupcoord.security.authorizer import AuthorizerConfig
from groupcoord.security.principal import ANONYMOUS
from groupcoord.server.codec import DecodedRequest, response_class
from groupcoord.server.versions import ApiKey

_INT32_MAX = 2**31 - 1
DISABLED = AuthorizerConfig()
"""The authorizer settings of a listener that checks nothing (``authorizer.enabled`` false)."""


def node_id_of(host: str, port: int) -> int:
    """The broker id an endpoint advertising ``host:port`` gives itself unless ``node.id`` is set.

    Every address is its own broker to clients: a standby that takes the lease over at another address is another
    node, as when Kafka's coordinator moves to another broker, and a restart at the same address is the same node,
    as a Kafka broker restarting. (One id for every address made librdkafka's admin client keep sending to the old
    address of that id after a take-over, until its request timed out.)
    """
    return zlib.crc32(f"{host}:{port}".encode()) & _INT32_MAX


@dataclass(frozen=True)
class BrokerAddress:
    """The address clients are told to connect to (the advertised listener, or else the bound address), and the
    broker id Metadata and FindCoordinator give with it."""

    host: str
    port: int
    node_id: int = -1

    def __post_init__(self) -> None:
        if self.node_id < 0:
            object.__setattr__(self, "node_id", node_id_of(self.host, self.port))


@dataclass(frozen=True)
class RequestContext:
    """One decoded request plus what an adapter may need to know about the endpoint and the connection.

    ``principal`` is who sent it (``User:NAME`` once SASL or a client certificate authenticated the connection,
    ``User:ANONYMOUS`` otherwise), and ``authorizer`` the listener's authorizer settings, for the authorization
    layer (:mod:`groupcoord.server.authorization`) to check it against the ACLs.
    """

    request: DecodedRequest
    broker: BrokerAddress
    client_host: str = ""
    principal: str = ANONYMOUS
    authorizer: AuthorizerConfig = DISABLED

    @property
    def body(self) -> Any:
        """The kafka-python request object (a :class:`~groupcoord.server.heartbeat_decode.HeartbeatBody` with the same
        fields for a usual Heartbeat, read by the fast path)."""
        return self.request.body

    @property
    def client_id(self) -> str:
        """The request header's client id (empty when null)."""
        return self.request.header.client_id or ""

    @property
    def api_version(self) -> int:
        """The version to answer at."""
        return self.request.api_version

    def response(self, **fields: Any) -> Any:
        """A response object of this request's API at the request's version."""
        return response_class(self.request.api_key)(version=self.api_version, **fields)


class ApiHandler(Protocol):
    """An adapter for one API: turns a request into a response, and builds error responses for it."""

    async def handle(self, ctx: RequestContext) -> Any:
        """Answer ``ctx.request`` (a kafka-python response object at ``ctx.api_version``)."""

    def error_response(self, ctx: RequestContext, error: ErrorCode) -> Any:
        """A response to ``ctx.request`` where every part carries ``error``."""


Dispatcher = Mapping[ApiKey, ApiHandler]
