"""The asyncio TCP endpoint speaking the Kafka wire protocol.

One event loop serves every connection. Per connection, requests are answered strictly in order, one at a time, as a
Kafka broker does: pipelined requests wait in the socket buffer until the previous response is written. Work that
must not run on the loop (durable writes, Spark jobs) is awaited by the adapters, so other connections keep being
served meanwhile.

The one exception is consecutive Produce requests: up to :data:`MAX_PIPELINED_PRODUCES` of them start at once, in
request order (so their batches join the topic's group commit in that order, and share its Delta commit), and their
answers are written in request order. A Kafka broker's local append takes a millisecond; a Delta commit tens, and
librdkafka sends one partition per Produce request, relying on several in flight. Any other request waits until every
Produce before it is answered, so what it observes is what it would observe one request at a time.

Bad input never reaches an adapter and never stops the server:

- an oversized frame (``socket.request.max.bytes``), a negative size, an unreadable header, a body that does not
  decode, or an API key or version that is not advertised closes that connection (Kafka does the same);
- an ApiVersions request at an unsupported version is the exception: it gets a v0 response with
  UNSUPPORTED_VERSION and the advertised ranges, so clients can retry at a version we speak.

Security (``listener.security.protocol``, docs/security.md): SSL and SASL_SSL wrap every connection in TLS; on
SASL_PLAINTEXT and SASL_SSL each connection authenticates first, and until then its frames go to its
:class:`~groupcoord.server.authentication.SaslGate` and nowhere else (:meth:`Endpoint._serve_connection` is the one
place that decides). Every request then carries its connection's principal in its context.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from groupcoord.config.binding import KeyedConfig, from_key
from groupcoord.config.resolve import Config, resolve_config
from groupcoord.protocol.errors import Errors
from groupcoord.security.authorizer import AuthorizerConfig
from groupcoord.security.config import ListenerSecurity
from groupcoord.security.credentials import Credentials, CredentialStore
from groupcoord.security.principal import ANONYMOUS, map_distinguished_name, user_principal
from groupcoord.security.tls import distinguished_name, server_context
from groupcoord.server.adapters.api_versions import unsupported_version_response
from groupcoord.server.api import ApiHandler, BrokerAddress, Dispatcher, RequestContext
from groupcoord.server.authentication import AuthenticationFailedClose, AuthenticationStats, SaslGate
from groupcoord.server.codec import (
    RequestRejected,
    UnsupportedApi,
    decode_request,
    encode_response,
)
from groupcoord.server.dispatcher import served_ranges
from groupcoord.server.framing import read_frame
from groupcoord.server.versions import SUPPORTED_VERSIONS, ApiKey, VersionRange

log = logging.getLogger("groupcoord.server.endpoint")

MAX_PIPELINED_PRODUCES = 5
"""Produce requests of one connection in progress at once (an idempotent producer keeps at most 5 in flight)."""

_PRODUCE_KEY = int(ApiKey.PRODUCE).to_bytes(2, "big")


def parse_host_port(value: str) -> tuple[str, int]:
    """Split ``HOST:PORT`` (the registry has already validated the shape)."""
    host, _, port = value.rpartition(":")
    return host.strip("[]"), int(port)


def _host_of(value: str) -> str:
    return parse_host_port(value)[0]


def _port_of(value: str) -> int:
    return parse_host_port(value)[1]


def _optional_host_port(value: str | None) -> tuple[str, int] | None:
    return parse_host_port(value) if value else None


@dataclass(frozen=True, kw_only=True)
class EndpointConfig(KeyedConfig):
    """Where the endpoint listens, what it advertises, and how large a request may be."""

    host: str = field(default="127.0.0.1", metadata=from_key("listen", convert=_host_of))
    port: int = field(default=0, metadata=from_key("listen", convert=_port_of))
    advertised: tuple[str, int] | None = field(
        default=None, metadata=from_key("advertised.listener", convert=_optional_host_port))
    max_request_bytes: int = field(default=104857600, metadata=from_key("socket.request.max.bytes"))
    stop_grace_seconds: float = 5.0
    security: ListenerSecurity = field(default_factory=ListenerSecurity)
    authorizer: AuthorizerConfig = field(default_factory=AuthorizerConfig)

    @classmethod
    def from_config(cls, config: Config | None = None) -> EndpointConfig:
        """Every bound field, the listener's security settings and the authorizer's, from ``config``."""
        resolved = config if config is not None else resolve_config()
        return replace(super().from_config(resolved), security=ListenerSecurity.from_config(resolved),
                       authorizer=AuthorizerConfig.from_config(resolved))


class Endpoint:
    """Serves the APIs of ``dispatcher`` on ``config.host:config.port``.

    Use ``await start()`` (returns the bound address), then ``await serve_forever()`` or just keep the loop running,
    and ``await stop()``: it stops accepting, answers in-flight requests with NOT_COORDINATOR and closes every
    connection.

    ``credentials`` are the users a SASL listener authenticates (the coordinator's hard state in a host);
    :attr:`authentication` counts the outcomes.
    """

    def __init__(
        self,
        dispatcher: Dispatcher,
        *,
        config: EndpointConfig,
        ranges: Mapping[ApiKey, VersionRange] = SUPPORTED_VERSIONS,
        credentials: CredentialStore | None = None,
    ) -> None:
        self._dispatcher = dispatcher
        self._config = config
        self._ranges = served_ranges(dispatcher, ranges)
        self._credentials: CredentialStore = credentials if credentials is not None else Credentials()
        self.authentication = AuthenticationStats()
        """Authentication successes and failures by mechanism (for the metrics endpoint)."""
        security = config.security
        self._tls = server_context(security.tls, security.client_auth) if security.uses_tls else None
        self._server: asyncio.Server | None = None
        self._bound: BrokerAddress | None = None
        self._connections: set[asyncio.Task[None]] = set()
        # Connection tasks currently inside an adapter, and those of them :meth:`stop` cancelled.
        self._in_handler: set[asyncio.Task[Any]] = set()
        self._cancelled_by_stop: set[asyncio.Task[Any]] = set()
        self._stopping = False

    def authentication_failures(self) -> int:
        """Failed authentications since the endpoint started (``groupcoord_authentication_failures_total``; safe to
        read from another thread)."""
        return self.authentication.failed

    @property
    def bound_address(self) -> BrokerAddress:
        """The address the socket is bound to (after :meth:`start`)."""
        if self._bound is None:
            raise RuntimeError("endpoint not started")
        return self._bound

    @property
    def advertised_address(self) -> BrokerAddress:
        """What Metadata and FindCoordinator tell clients: the advertised listener, or else the bound address."""
        if self._config.advertised is not None:
            return BrokerAddress(*self._config.advertised)
        return self.bound_address

    async def start(self) -> BrokerAddress:
        """Bind and start accepting; port 0 picks a free port. Returns the bound address."""
        self._server = await asyncio.start_server(self._on_connection, self._config.host, self._config.port,
                                                  ssl=self._tls)
        host, port = self._server.sockets[0].getsockname()[:2]
        self._bound = BrokerAddress(host, port)
        log.info("listening on %s:%d (%s)", host, port, self._config.security.protocol)
        return self._bound

    async def serve_forever(self) -> None:
        """Serve until :meth:`stop` is called (or the task is cancelled)."""
        if self._server is None:
            await self.start()
        assert self._server is not None
        try:
            await self._server.serve_forever()
        except asyncio.CancelledError:
            if not self._stopping:
                raise

    async def stop(self) -> None:
        """Stop accepting, answer in-flight requests with NOT_COORDINATOR, and close every connection."""
        self._stopping = True
        if self._server is not None:
            self._server.close()
        for task in list(self._in_handler):
            self._cancelled_by_stop.add(task)
            task.cancel()
        if self._connections:
            _, pending = await asyncio.wait(set(self._connections), timeout=self._config.stop_grace_seconds)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending)
        if self._server is not None:
            await self._server.wait_closed()

    def _on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.create_task(self._serve_connection(reader, writer))
        self._connections.add(task)
        task.add_done_callback(self._connections.discard)

    async def _serve_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        client_host = f"/{peer[0]}" if isinstance(peer, tuple) else ""
        produces = _OrderedAnswers(writer, peer, lambda: self._stopping)
        gate = SaslGate(self._config.security, self._credentials, self.authentication, ranges=self._ranges,
                        peer=str(peer))
        try:
            principal = self._tls_principal(writer)
            while not self._stopping:
                payload = await read_frame(reader, max_bytes=self._config.max_request_bytes)
                if payload is None:
                    break
                if not gate.authenticated:  # the one place: nothing of an unauthenticated stream passes but this
                    frame = await gate.admit(payload, lambda versions: self._answer(versions, client_host))
                    principal = gate.principal or principal
                elif payload[:2] == _PRODUCE_KEY:
                    await produces.wait_below(MAX_PIPELINED_PRODUCES)
                    produces.add(self._answer(payload, client_host, principal))
                    continue
                else:
                    await produces.wait_below(1)  # every earlier Produce answered first
                    frame = await self._answer(payload, client_host, principal)
                if frame is not None:
                    writer.write(frame)
                    await writer.drain()
        except AuthenticationFailedClose as exc:
            if exc.answer is not None:
                with contextlib.suppress(ConnectionError):
                    writer.write(exc.answer)
                    await writer.drain()
        except RequestRejected as exc:
            log.warning("closing connection from %s: %s", peer, exc)
        except (ConnectionError, asyncio.CancelledError):
            pass
        except Exception:
            log.exception("closing connection from %s after an internal error", peer)
        finally:
            await produces.close()
            writer.close()
            with contextlib.suppress(ConnectionError, asyncio.CancelledError):
                await writer.wait_closed()

    def _tls_principal(self, writer: asyncio.StreamWriter) -> str:
        """``User:<mapped DN>`` of the client certificate on a TLS connection, else ``User:ANONYMOUS`` (a SASL
        listener replaces it with the SASL user, as Kafka's principal builder does)."""
        ssl_object = writer.get_extra_info("ssl_object")
        certificate = ssl_object.getpeercert() if ssl_object is not None else None
        if not certificate:
            return ANONYMOUS
        name = map_distinguished_name(self._config.security.mapping_rules, distinguished_name(certificate))
        return user_principal(name)

    async def _answer(self, payload: bytes, client_host: str, principal: str = ANONYMOUS) -> bytes | None:
        """The encoded response frame to one request payload (``None``: the request expects no answer); raises
        :class:`RequestRejected` to close."""
        try:
            request = decode_request(payload, ranges=self._ranges)
        except UnsupportedApi as exc:
            if exc.header.api_key != ApiKey.API_VERSIONS:
                raise
            # Every Java client connection asks at v5 first and retries at v4: normal, so not worth an INFO line.
            log.debug("ApiVersions v%d is not supported: answering v0 UNSUPPORTED_VERSION", exc.header.api_version)
            response = unsupported_version_response(self._ranges)
            return encode_response(response, correlation_id=exc.header.correlation_id)
        handler = self._dispatcher[request.api_key]
        ctx = RequestContext(request, self.advertised_address, client_host, principal, self._config.authorizer)
        response = await self._run(handler, ctx)
        if response is None:
            return None
        correlation_id = request.header.correlation_id
        try:
            return encode_response(response, correlation_id=correlation_id)
        except Exception:
            log.exception("cannot encode the %s v%d response", request.api_key.name, request.api_version)
            fallback = handler.error_response(ctx, Errors.UNKNOWN_SERVER_ERROR)
            return encode_response(fallback, correlation_id=correlation_id)

    async def _run(self, handler: ApiHandler, ctx: RequestContext) -> Any:
        """Run one adapter; at :meth:`stop` its work is cancelled and answered with NOT_COORDINATOR.

        The adapter is awaited in the connection's own task (no task per request: a heartbeat then completes
        without a single loop turn). To cancel it, :meth:`stop` cancels the connection task while it is in here,
        and this method turns that one cancellation back into a response.
        """
        task = asyncio.current_task()
        assert task is not None
        self._in_handler.add(task)
        try:
            return await handler.handle(ctx)
        except RequestRejected:
            raise
        except asyncio.CancelledError:
            if task not in self._cancelled_by_stop:
                raise
            self._cancelled_by_stop.discard(task)
            task.uncancel()
            return handler.error_response(ctx, Errors.NOT_COORDINATOR)
        except Exception:
            log.exception("handler for %s v%d failed", ctx.request.api_key.name, ctx.api_version)
            return handler.error_response(ctx, Errors.UNKNOWN_SERVER_ERROR)
        finally:
            self._in_handler.discard(task)


class _OrderedAnswers:
    """The Produce requests of one connection in progress, answered in request order by one sender task.

    Each request runs in a task of its own, created in request order (so each runs up to its first wait, where its
    batches are queued on the group commit, in that order). The sender writes their answers in the same order; an
    acks-0 Produce has none. A request that must close the connection (a refused acks-0 Produce, a frame that does
    not decode), or a write that fails, closes the connection, which ends the reading loop; so does an answer written
    while the endpoint stops.
    """

    def __init__(self, writer: asyncio.StreamWriter, peer: Any, stopping: Callable[[], bool]) -> None:
        self._writer = writer
        self._peer = peer
        self._stopping = stopping
        self._queue: asyncio.Queue[asyncio.Task[bytes | None]] = asyncio.Queue()
        self._written = asyncio.Event()
        self._pending = 0
        self._sender: asyncio.Task[None] | None = None

    def add(self, answer: Coroutine[Any, Any, bytes | None]) -> None:
        """Start ``answer`` now; its frame is written after those added before it."""
        if self._sender is None:
            self._sender = asyncio.create_task(self._send())
        self._pending += 1
        self._queue.put_nowait(asyncio.create_task(answer))

    async def wait_below(self, limit: int) -> None:
        """Return once fewer than ``limit`` requests are unanswered (or the sender has stopped)."""
        while self._pending >= limit and self._sender is not None and not self._sender.done():
            self._written.clear()
            await self._written.wait()

    async def close(self) -> None:
        """Stop the sender and cancel what it has not answered (their batches stay queued on the group commit)."""
        if self._sender is None:
            return
        self._sender.cancel()
        while not self._queue.empty():
            self._queue.get_nowait().cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._sender

    async def _send(self) -> None:
        try:
            while True:
                task = await self._queue.get()
                try:
                    frame = await task
                    if frame is not None:
                        self._writer.write(frame)
                        await self._writer.drain()
                finally:
                    self._pending -= 1
                    self._written.set()
                if self._stopping() and self._queue.empty():  # the endpoint stops: every answer is written
                    break
        except RequestRejected as exc:
            log.warning("closing connection from %s: %s", self._peer, exc)
        except ConnectionError:
            pass
        except Exception:
            log.exception("closing connection from %s after an internal error", self._peer)
        self._writer.close()  # the reading loop sees the end of the stream
