"""The metrics endpoint: ``/metrics`` in Prometheus's text format and ``/health`` as JSON, on ``metrics.listen``.

A :class:`http.server.ThreadingHTTPServer` in daemon threads of its own, so a scrape never runs on the coordinator's
event loop (it only asks the loop for one sample of the core). ``/metrics`` is ``prometheus_client``'s exposition of
the host's own registry (OpenMetrics too, when the scraper asks for it); ``/health`` is
:func:`groupcoord.metrics.health.health`, with HTTP 200 while the host serves or stands by and 503 otherwise. Any
other path is a 404.

The endpoint names groups and topics, so it binds loopback unless ``metrics.listen`` says otherwise.
"""

from __future__ import annotations

import json
import logging
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from groupcoord.metrics.health import health
from groupcoord.metrics.host_state import HostState
from groupcoord.server.endpoint import parse_host_port

log = logging.getLogger("groupcoord.metrics.http")


class MetricsServer:
    """Serves ``/metrics`` and ``/health`` of one host on ``listen`` (``HOST:PORT``, as the registry checks it; port
    0 picks a free one) until :meth:`stop`."""

    def __init__(self, listen: str, registry: CollectorRegistry, host: HostState) -> None:
        self._address = parse_host_port(listen)
        self._registry = registry
        self._host = host
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> str:
        """``HOST:PORT`` bound (after :meth:`start`; port 0 is replaced by the one picked)."""
        if self._server is None:
            raise RuntimeError("the metrics server is not started")
        host, port = self._server.server_address[:2]
        name = host.decode() if isinstance(host, bytes) else host
        return f"[{name}]:{port}" if ":" in name else f"{name}:{port}"

    def start(self) -> str:
        """Bind and serve from a daemon thread; returns the bound ``HOST:PORT``."""
        handler = _handler_class(self._registry, self._host)
        server_class = _IPv6Server if ":" in self._address[0] else _Server
        self._server = server_class(self._address, handler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="groupcoord-metrics", daemon=True)
        self._thread.start()
        log.info("metrics on http://%s/metrics and /health", self.address)
        return self.address

    def stop(self) -> None:
        """Stop serving and close the socket (idempotent)."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join()
            self._thread = None


class _Server(ThreadingHTTPServer):
    """A threading HTTP server that logs a failed exchange in one line (a scraper that timed out and hung up)."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.warning("metrics: the exchange with %s failed: %s", client_address, sys.exc_info()[1])


class _IPv6Server(_Server):
    address_family = socket.AF_INET6


def _handler_class(registry: CollectorRegistry, host: HostState) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        """``/metrics`` and ``/health``."""

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                encoder, content_type = choose_encoder(self.headers.get("Accept", ""))
                self._reply(200, content_type, encoder(registry))
            elif path == "/health":
                document = health(host)
                self._reply(200 if document["healthy"] else 503, "application/json",
                            json.dumps(document).encode())
            else:
                self._reply(404, "text/plain; charset=utf-8", b"not found: try /metrics or /health\n")

        def _reply(self, status: int, content_type: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("%s %s", self.address_string(), format % args)

    return Handler
