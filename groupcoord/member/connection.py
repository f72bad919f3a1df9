"""A blocking Kafka protocol connection to one broker, encoding with kafka-python's protocol classes.

One request is on the wire at a time (a lock serialises the heartbeat thread and the application thread), which
is also how the endpoint answers: strictly in order, per connection. On connect the connection asks ApiVersions
and afterwards sends each API at the highest version both sides speak, capped by the caller's maximum.
"""

from __future__ import annotations

import logging
import socket
import ssl
import struct
import threading
from typing import Any

from kafka.protocol.metadata import ApiVersionsRequest

from groupcoord.member.errors import CoordinatorUnavailableError
from groupcoord.protocol.schemas import decode_response, encode_request
from groupcoord.security.config import ClientSecurity
from groupcoord.security.errors import AuthenticationFailed
from groupcoord.security.sasl_client import sasl_client
from groupcoord.security.tls import client_context

log = logging.getLogger("groupcoord.member.connection")

_SIZE = struct.Struct(">i")


class ConnectionLostError(CoordinatorUnavailableError):
    """The connection failed, timed out or was closed by the broker."""


class AuthenticationError(ConnectionLostError):
    """The broker refused this client's credentials (or the client refused the broker's SCRAM signature)."""


_SASL_HANDSHAKE, _SASL_AUTHENTICATE = 17, 36


class UnsupportedApiError(CoordinatorUnavailableError):
    """The broker does not speak an API (or any version of it this client speaks)."""


class BrokerConnection:
    """A connection to ``host:port``; :meth:`send` is thread-safe and blocking."""

    def __init__(self, host: str, port: int, *, client_id: str, timeout_ms: int,
                 security: ClientSecurity | None = None) -> None:
        self.host = host
        self.port = port
        self._security = security or ClientSecurity()
        self._client_id = client_id
        self._timeout_s = timeout_ms / 1000
        self._lock = threading.Lock()
        self._sock: socket.socket | ssl.SSLSocket | None = None
        self._correlation_id = 0
        self._versions: dict[int, tuple[int, int]] = {}

    @property
    def address(self) -> str:
        """``host:port``."""
        return f"{self.host}:{self.port}"

    @property
    def connected(self) -> bool:
        """True while the socket is open."""
        return self._sock is not None

    def connect(self) -> None:
        """Open the socket and learn the broker's API versions; raises :class:`ConnectionLostError`."""
        with self._lock:
            if self._sock is not None:
                return
            try:
                sock = socket.create_connection((self.host, self.port), timeout=self._timeout_s)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                if self._security.uses_tls:  # the host name is checked against the certificate
                    context = client_context(self._security.tls, check_hostname=self._security.check_hostname)
                    sock = context.wrap_socket(sock, server_hostname=self.host)
                self._sock = sock
            except OSError as exc:
                self._sock = None
                raise ConnectionLostError(f"cannot connect to {self.address}: {exc}") from None
            response = self._round_trip(ApiVersionsRequest(version=0), self._timeout_s)
            if response.error_code != 0:
                self._close_locked()
                raise ConnectionLostError(f"{self.address} refused ApiVersions (error {response.error_code})")
            self._versions = {v.api_key: (v.min_version, v.max_version) for v in response.api_keys}
            if self._security.sasl:
                self._authenticate_locked()

    def _authenticate_locked(self) -> None:
        """SaslHandshake v1 and SaslAuthenticate v1 until the exchange completes; :class:`AuthenticationError`."""
        security = self._security
        assert security.username is not None and security.password is not None
        handshake = self._schema_round_trip(_SASL_HANDSHAKE, 1, {"Mechanism": security.mechanism}, self._timeout_s)
        if handshake["ErrorCode"] != 0:
            self._close_locked()
            raise AuthenticationError(f"{self.address} does not accept SASL mechanism {security.mechanism} "
                                      f"(it accepts {', '.join(handshake['Mechanisms'])})")
        exchange = sasl_client(security.mechanism, security.username, security.password)
        token: bytes | None = exchange.first()
        try:
            while token is not None:
                answer = self._schema_round_trip(_SASL_AUTHENTICATE, 1, {"AuthBytes": token}, self._timeout_s)
                if answer["ErrorCode"] != 0:
                    raise AuthenticationFailed(answer["ErrorMessage"] or f"error {answer['ErrorCode']}")
                token = exchange.next(bytes(answer["AuthBytes"]))
        except AuthenticationFailed as exc:
            self._close_locked()
            raise AuthenticationError(f"authentication as {security.username} with {security.mechanism} to "
                                      f"{self.address} failed: {exc}") from None

    def send_schema(self, api_key: int, version: int, body: dict[str, Any], *,
                    timeout_ms: int | None = None) -> dict[str, Any]:
        """Send a request encoded with Kafka's schemas (APIs kafka-python has no classes for); its response body."""
        timeout_s = self._timeout_s if timeout_ms is None else timeout_ms / 1000
        with self._lock:
            if self._sock is None:
                raise ConnectionLostError(f"not connected to {self.address}")
            return self._schema_round_trip(api_key, version, body, timeout_s)

    def _schema_round_trip(self, api_key: int, version: int, body: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        assert self._sock is not None
        self._correlation_id = (self._correlation_id + 1) & 0x7FFFFFFF
        payload = encode_request(api_key, version, self._correlation_id, self._client_id, body)
        try:
            self._sock.settimeout(timeout_s)
            self._sock.sendall(_SIZE.pack(len(payload)) + payload)
            (size,) = _SIZE.unpack(self._read_exactly(_SIZE.size))
            header, answer = decode_response(api_key, version, self._read_exactly(size))
        except (OSError, ConnectionLostError) as exc:
            self._close_locked()
            raise ConnectionLostError(f"API {api_key} to {self.address} failed: {exc}") from None
        if header["CorrelationId"] != self._correlation_id:
            self._close_locked()
            raise ConnectionLostError(f"{self.address} answered out of order")
        return answer

    def version_for(self, request_class: Any, max_version: int) -> int:
        """The version to send ``request_class`` at: the highest both sides speak, at most ``max_version``."""
        advertised = self._versions.get(request_class.API_KEY)
        if advertised is None:
            raise UnsupportedApiError(f"{self.address} does not serve {request_class.__name__}")
        low, high = advertised
        version: int = min(high, max_version, request_class.max_version)
        if version < low:
            raise UnsupportedApiError(
                f"{self.address} speaks {request_class.__name__} v{low}-v{high}; this client at most v{max_version}"
            )
        return version

    def send(self, request: Any, *, timeout_ms: int | None = None) -> Any:
        """Send ``request`` (a versioned kafka-python request) and return its decoded response."""
        timeout_s = self._timeout_s if timeout_ms is None else timeout_ms / 1000
        with self._lock:
            if self._sock is None:
                raise ConnectionLostError(f"not connected to {self.address}")
            return self._round_trip(request, timeout_s)

    def close(self) -> None:
        """Close the socket (idempotent)."""
        with self._lock:
            self._close_locked()

    def _round_trip(self, request: Any, timeout_s: float) -> Any:
        assert self._sock is not None
        self._correlation_id = (self._correlation_id + 1) & 0x7FFFFFFF
        request.with_header(correlation_id=self._correlation_id, client_id=self._client_id)
        try:
            self._sock.settimeout(timeout_s)
            self._sock.sendall(bytes(request.encode(header=True, framed=True)))
            (size,) = _SIZE.unpack(self._read_exactly(_SIZE.size))
            payload = self._read_exactly(size)
        except (OSError, ConnectionLostError) as exc:
            self._close_locked()
            raise ConnectionLostError(f"{type(request).__name__} to {self.address} failed: {exc}") from None
        response = request.header.get_response_class().decode(payload, header=True)
        if response.header.correlation_id != self._correlation_id:
            self._close_locked()
            raise ConnectionLostError(f"{self.address} answered out of order")
        return response

    def _read_exactly(self, size: int) -> bytes:
        assert self._sock is not None
        chunks = bytearray()
        while len(chunks) < size:
            chunk = self._sock.recv(size - len(chunks))
            if not chunk:
                raise ConnectionLostError("connection closed by the broker")
            chunks += chunk
        return bytes(chunks)

    def _close_locked(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None
