"""Live metrics of a coordinator host: ``/metrics`` (Prometheus) and ``/health`` on ``metrics.listen``.

- :mod:`~groupcoord.metrics.coordinator_metrics`: :class:`CoordinatorMetrics`, one registry per host and the
  hooks the host wires in;
- :mod:`~groupcoord.metrics.state_collector`: what is read at scrape time (groups, members, lease, record log,
  materializer, consumer lag);
- :mod:`~groupcoord.metrics.consumer_lag`: kafka_exporter's consumer-lag families, shared with the checkpoint job's
  textfile;
- :mod:`~groupcoord.metrics.requests`, :mod:`~groupcoord.metrics.record_watch`: request latencies per API;
  rebalances and offset commits from the core's records;
- :mod:`~groupcoord.metrics.http_server`, :mod:`~groupcoord.metrics.health`: the HTTP endpoint and its health
  document; :mod:`~groupcoord.metrics.authentication`: the count the SASL endpoint provides.

``docs/metrics.md`` lists every metric with its labels, and the Grafana dashboard built on them. The package sits
between the server and the host: the host imports it, and it reads the core, the log, the state tables and the
topic logs below it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from groupcoord.metrics.authentication import AuthenticationFailures
    from groupcoord.metrics.coordinator_metrics import CoordinatorMetrics
    from groupcoord.metrics.host_state import Phase, ServingTerm
    from groupcoord.metrics.http_server import MetricsServer

__all__ = ["AuthenticationFailures", "CoordinatorMetrics", "MetricsServer", "Phase", "ServingTerm"]

_HOMES = {"AuthenticationFailures": "authentication", "CoordinatorMetrics": "coordinator_metrics",
          "MetricsServer": "http_server", "Phase": "host_state", "ServingTerm": "host_state"}
"""The submodule of each name of :data:`__all__`, imported at the name's first use (PEP 562): the package stays
import-light, since :mod:`~groupcoord.metrics.consumer_lag`'s lag rule is also used by the ``groupcoord`` source's
driver-side worker, which must not load the coordinator, the server and the HTTP endpoint for it."""


def __getattr__(name: str) -> Any:
    """A name of :data:`__all__`, from its submodule."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
