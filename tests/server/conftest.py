"""Fixtures for the wire tests: an endpoint running on its own event loop thread, and a raw Kafka socket client."""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kafka.protocol.api_header import RequestHeader

from groupcoord.coordinator import CoordinatorConfig, GroupCoordinator
from groupcoord.log.memory import InMemoryRecordLog
from groupcoord.runtime.service import CoordinatorService
from groupcoord.runtime.writer import log_persister
from groupcoord.security.credentials import CredentialStore
from groupcoord.server.api import BrokerAddress, Dispatcher
from groupcoord.server.dispatcher import build_dispatcher
from groupcoord.server.endpoint import Endpoint, EndpointConfig
from groupcoord.server.topics import StaticTopics
from groupcoord.state_root import StateRoot
from groupcoord.topics import TopicCatalog
from groupcoord.topics.appender import TopicAppender
from groupcoord.topics.embedded import EmbeddedTopics

SOCKET_TIMEOUT = 5.0


class RunningEndpoint:
    """An :class:`Endpoint` served by a private event loop in a daemon thread."""

    def __init__(self, dispatcher: Dispatcher, config: EndpointConfig,
                 credentials: CredentialStore | None = None) -> None:
        self.loop = asyncio.new_event_loop()
        self.endpoint = Endpoint(dispatcher, config=config, credentials=credentials)
        self.address: BrokerAddress = self.loop.run_until_complete(self.endpoint.start())
        self._thread = threading.Thread(target=self.loop.run_forever, name="endpoint-loop", daemon=True)
        self._thread.start()

    @property
    def bootstrap(self) -> str:
        """``host:port`` for kafka-python's ``bootstrap_servers``."""
        return f"{self.address.host}:{self.address.port}"

    def call(self, coro: Any, timeout: float = 10.0) -> Any:
        """Run ``coro`` on the endpoint's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        """Stop the endpoint, then the loop and its thread."""
        try:
            self.call(self.endpoint.stop())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(10)
            self.loop.close()


@pytest.fixture
def start_endpoint() -> Iterator[Callable[..., RunningEndpoint]]:
    """Start endpoints (``dispatcher=`` defaults to a wire-only one with topic ``t1`` of 3 partitions;
    ``credentials=`` are the users of a SASL listener)."""
    started: list[RunningEndpoint] = []

    def start(dispatcher: Dispatcher | None = None, credentials: CredentialStore | None = None,
              **config: Any) -> RunningEndpoint:
        if dispatcher is None:
            dispatcher = build_dispatcher(topics=StaticTopics({"t1": 3}))
        running = RunningEndpoint(dispatcher, EndpointConfig(**config), credentials)
        started.append(running)
        return running

    yield start
    for running in started:
        running.close()


class RawClient:
    """A blocking socket speaking Kafka frames, with kafka-python objects for bodies; every read has a timeout."""

    def __init__(self, address: BrokerAddress) -> None:
        self.sock = socket.create_connection((address.host, address.port), timeout=SOCKET_TIMEOUT)
        self._correlation_id = 0

    def encode(self, request: Any, *, correlation_id: int | None = None) -> bytes:
        """A framed request with a header, as kafka-python's client would send it."""
        if correlation_id is None:
            self._correlation_id += 1
            correlation_id = self._correlation_id
        request.with_header(correlation_id=correlation_id, client_id="raw-test")
        return bytes(request.encode(header=True, framed=True))

    def send_raw(self, data: bytes) -> None:
        """Write bytes as they are."""
        self.sock.sendall(data)

    def read_frame(self) -> bytes | None:
        """The next response payload, or ``None`` when the server closed the connection."""
        prefix = self._read_exactly(4)
        if prefix is None:
            return None
        (size,) = struct.unpack(">i", prefix)
        return self._read_exactly(size)

    def request(self, request: Any) -> Any:
        """Send ``request`` and decode its response with kafka-python's response class."""
        self.send_raw(self.encode(request))
        payload = self.read_frame()
        assert payload is not None, "server closed the connection"
        return decode_response(request, payload)

    def closed_by_server(self) -> bool:
        """True when the server has closed the connection (reads hit end of stream)."""
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True

    def close(self) -> None:
        """Close the socket."""
        self.sock.close()

    def _read_exactly(self, size: int) -> bytes | None:
        chunks = bytearray()
        while len(chunks) < size:
            try:
                chunk = self.sock.recv(size - len(chunks))
            except ConnectionResetError:
                return None
            if not chunk:
                return None
            chunks += chunk
        return bytes(chunks)


def decode_response(request: Any, payload: bytes) -> Any:
    """Decode a response payload (header included) to ``request`` with kafka-python's matching class."""
    header: RequestHeader = request.header
    response_class = header.get_response_class()
    return response_class.decode(payload, header=True)


@pytest.fixture
def raw_client() -> Iterator[Callable[[BrokerAddress], RawClient]]:
    """Open raw clients that are closed after the test."""
    clients: list[RawClient] = []

    def connect(address: BrokerAddress) -> RawClient:
        client = RawClient(address)
        clients.append(client)
        return client

    yield connect
    for client in clients:
        client.close()


@dataclass
class CoordinatorStack:
    """A core coordinator behind a :class:`CoordinatorService`, persisting into an in-memory record log, served by
    an endpoint with the embedded topics of a state root."""

    running: RunningEndpoint
    service: CoordinatorService
    log: InMemoryRecordLog
    root: StateRoot

    def persisted(self) -> int:
        """How many records reached the log."""
        return sum(len(batch) for batch in self.log.batches)


@pytest.fixture
def coordinator_stack(
    tmp_path: Path, start_endpoint: Callable[..., RunningEndpoint]
) -> Iterator[Callable[..., CoordinatorStack]]:
    """Start a full stack (the APIs ``serve`` answers, Produce and the topic admin APIs included, consumer groups'
    heartbeats not); ``topics`` maps topic names to partition counts created in the catalog."""
    services: list[tuple[RunningEndpoint, CoordinatorService]] = []
    appenders: list[TopicAppender] = []

    def start(topics: dict[str, int] | None = None, endpoint_config: dict[str, Any] | None = None,
              **coordinator_config: Any) -> CoordinatorStack:
        root = StateRoot.open(tmp_path / f"state-{len(services)}", create=True)
        catalog = TopicCatalog(root)
        for name, partitions in (topics or {}).items():
            catalog.create(name, partitions)
        embedded = EmbeddedTopics(root, catalog=catalog)
        log = InMemoryRecordLog()
        config = CoordinatorConfig(**{"initial_rebalance_delay_ms": 0, **coordinator_config})
        core = GroupCoordinator(config)
        service = CoordinatorService(core, persist=log_persister(log), tick_ms=20)
        appenders.append(TopicAppender(root, catalog=catalog))
        running = start_endpoint(build_dispatcher(topics=embedded, service=service, topic_reader=embedded,
                                                  topic_writer=appenders[-1], topic_admin=catalog,
                                                  credentials=core.credentials), credentials=core.credentials,
                                 **(endpoint_config or {}))
        running.call(service.start())
        services.append((running, service))
        return CoordinatorStack(running, service, log, root)

    yield start
    for running, service in services:
        running.call(service.stop())
    for appender in appenders:
        appender.close()
