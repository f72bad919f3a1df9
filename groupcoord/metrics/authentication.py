"""Authentication failures: the one number the metrics read from the (SASL/TLS) endpoint.

The endpoint that authenticates connections counts its failures; an object with this method (the endpoint itself,
or whatever keeps the count) is handed to :meth:`groupcoord.metrics.CoordinatorMetrics.count_authentication_failures`,
and ``groupcoord_authentication_failures_total`` reads it at every scrape. Until one is handed over (an endpoint
without SASL), the metric is exposed as 0, so dashboards and alerts work the same on both.

The host checks ``isinstance(endpoint, AuthenticationFailures)`` (the protocol is runtime-checkable), so an endpoint
that gains the method is picked up without further wiring.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class AuthenticationFailures(Protocol):
    """Something that counts failed authentications (SASL or TLS handshakes); thread-safe to read."""

    def authentication_failures(self) -> int:
        """Failed authentications since the count started (a counter: it never goes down)."""
