"""A blocking Kafka protocol connection to one broker, encoding with kafka-python's protocol classes.

One request is on the wire at a time (a lock serialises the heartbeat thread and the application thread), which
is also how the endpoint answers: strictly in order, per connection. On connect the connection asks ApiVersions
and afterwards sends each API at the highest version both sides speak, capped by the caller's maximum.
"""

from __future__ import annotations

import logging
import socket
import struct
import threading
from typing import Any

from kafka.protocol.metadata import ApiVersionsRequest

from groupcoord.member.errors import CoordinatorUnavailableError

log = logging.getLogger("groupcoord.member.connection")

_SIZE = struct.Struct(">i")


class ConnectionLostError(CoordinatorUnavailableError):
    """The connection failed, timed out or was closed by the broker."""


class UnsupportedApiError(CoordinatorUnavailableError):
    """The broker does not speak an API (or any version of it this client speaks)."""


class BrokerConnection:
    """A connection to ``host:port``; :meth:`send` is thread-safe and blocking."""

    def __init__(self, host: str, port: int, *, client_id: str, timeout_ms: int) -> None:
        self.host = host
        self.port = port
        self._client_id = client_id
        self._timeout_s = timeout_ms / 1000
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
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
                self._sock = socket.create_connection((self.host, self.port), timeout=self._timeout_s)
                self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError as exc:
                self._sock = None
                raise ConnectionLostError(f"cannot connect to {self.address}: {exc}") from None
            response = self._round_trip(ApiVersionsRequest(version=0), self._timeout_s)
            if response.error_code != 0:
                self._close_locked()
                raise ConnectionLostError(f"{self.address} refused ApiVersions (error {response.error_code})")
            self._versions = {v.api_key: (v.min_version, v.max_version) for v in response.api_keys}

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
