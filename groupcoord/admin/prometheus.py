"""The checkpoint report as a Prometheus textfile (node_exporter's textfile collector), with kafka_exporter's
metric and label names, so existing dashboards and alerts work unchanged.

The samples are :func:`groupcoord.metrics.consumer_lag.consumer_group_families`' (the live ``/metrics`` endpoint
serves the same names), plus the Burrow status of each group, and ``prometheus_client`` writes them: the file is
replaced atomically (written beside it, then renamed), so a scrape never sees half a file.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest, write_to_textfile
from prometheus_client.core import Metric

from groupcoord.admin.checkpoint import GroupReport
from groupcoord.metrics.consumer_lag import consumer_group_families

_STATUS_VALUE = {"OK": 0, "WARN": 1, "ERR": 2}


class _Reports:
    """A collector of the families of fixed reports."""

    def __init__(self, reports: Sequence[GroupReport]) -> None:
        self._reports = reports

    def collect(self) -> Iterable[Metric]:
        statuses = {group.group_id: _STATUS_VALUE[group.status.status] for group in self._reports}
        return consumer_group_families(self._reports, statuses)


def _registry(reports: Sequence[GroupReport]) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Reports(reports))
    return registry


def render(reports: Sequence[GroupReport]) -> str:
    """The textfile content for ``reports``."""
    return generate_latest(_registry(reports)).decode()


def write_textfile(path: str | Path, reports: Sequence[GroupReport]) -> Path:
    """Write :func:`render` of ``reports`` to ``path`` atomically; returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    write_to_textfile(str(target), _registry(reports))
    return target
