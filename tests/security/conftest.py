"""Fixtures for the security tests: users, a SASL listener over a recording dispatcher, and a raw SASL client."""

from __future__ import annotations

import struct
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from bench.secured_certificates import Certificates, make_certificates
from groupcoord.protocol.schemas import decode_response, encode_request
from groupcoord.security.config import ListenerSecurity
from groupcoord.security.credentials import Credentials
from groupcoord.security.plain import new_plain_credential
from groupcoord.security.scram import ScramMechanism, new_scram_credential
from groupcoord.server.api import ApiHandler, Dispatcher, RequestContext
from groupcoord.server.dispatcher import build_dispatcher
from groupcoord.server.endpoint import EndpointConfig
from groupcoord.server.topics import StaticTopics
from groupcoord.server.versions import ApiKey
from tests.server.conftest import RawClient, RunningEndpoint

USER, PASSWORD = "alice", "alice-secret-1"
ALL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


def users() -> Credentials:
    """``alice`` with a credential for every mechanism (SCRAM at Kafka's least iterations: fast tests)."""
    credentials = Credentials()
    credentials.put(USER, "PLAIN", new_plain_credential(PASSWORD))
    for mechanism in ScramMechanism:
        credentials.put(USER, mechanism.mechanism_name, new_scram_credential(mechanism, PASSWORD, iterations=4096))
    return credentials


@dataclass
class Recording:
    """Every request that reached the dispatcher's adapters: ``(api key, principal)``."""

    seen: list[tuple[ApiKey, str]] = field(default_factory=list)


class _Recorder:
    def __init__(self, inner: ApiHandler, recording: Recording) -> None:
        self._inner, self._recording = inner, recording

    async def handle(self, ctx: RequestContext) -> Any:
        self._recording.seen.append((ctx.request.api_key, ctx.principal))
        return await self._inner.handle(ctx)

    def error_response(self, ctx: RequestContext, error: Any) -> Any:
        return self._inner.error_response(ctx, error)


def recording_dispatcher(recording: Recording) -> Dispatcher:
    """The wire-only dispatcher (topic ``t1``) with every adapter recording what reaches it."""
    return {key: _Recorder(handler, recording)
            for key, handler in build_dispatcher(topics=StaticTopics({"t1": 3})).items()}


@dataclass
class SaslListener:
    """A running SASL_PLAINTEXT endpoint and what reached its adapters."""

    running: RunningEndpoint
    recording: Recording


@pytest.fixture
def sasl_listener() -> Iterator[Callable[..., SaslListener]]:
    """Start SASL listeners (``protocol``, ``mechanisms``, ``delay_ms``) with :func:`users`; closed after the test."""
    started: list[RunningEndpoint] = []

    def start(protocol: str = "SASL_PLAINTEXT", mechanisms: tuple[str, ...] = ALL_MECHANISMS,
              delay_ms: int = 100, **security: Any) -> SaslListener:
        recording = Recording()
        listener = ListenerSecurity(protocol=protocol, mechanisms=mechanisms,
                                    failed_authentication_delay_ms=delay_ms, **security)
        started.append(RunningEndpoint(recording_dispatcher(recording), EndpointConfig(security=listener), users()))
        return SaslListener(started[-1], recording)

    yield start
    for running in started:
        running.close()


class SaslRawClient(RawClient):
    """A raw client speaking the SASL APIs with Kafka's schemas."""

    def call(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any] | None:
        """Send one request; its response body, or ``None`` when the server closed the connection instead."""
        self._correlation_id += 1
        payload = encode_request(api_key, version, self._correlation_id, "raw-sasl", body)
        self.send_raw(struct.pack(">i", len(payload)) + payload)
        answer = self.read_frame()
        return None if answer is None else decode_response(api_key, version, answer)[1]

    def timed_call(self, api_key: int, version: int, body: dict[str, Any]) -> tuple[dict[str, Any] | None, float]:
        """:meth:`call` and its seconds."""
        started = time.monotonic()
        answer = self.call(api_key, version, body)
        return answer, time.monotonic() - started


@pytest.fixture
def sasl_client() -> Iterator[Callable[[RunningEndpoint], SaslRawClient]]:
    """Open raw SASL clients that are closed after the test."""
    clients: list[SaslRawClient] = []

    def connect(running: RunningEndpoint) -> SaslRawClient:
        clients.append(SaslRawClient(running.address))
        return clients[-1]

    yield connect
    for client in clients:
        client.close()


def plain_token(user: str, password: str) -> bytes:
    """A PLAIN client message."""
    return f"\0{user}\0{password}".encode()


@pytest.fixture(scope="session")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    """A CA, server and client certificates (:mod:`bench.secured_certificates`)."""
    return make_certificates(tmp_path_factory.mktemp("certs"))
