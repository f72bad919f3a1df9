"""Hosting a coordinator: election, load, serving, renewal and step-down around the pure core.

:class:`~groupcoord.host.coordinator_host.CoordinatorHost` is what ``groupcoord serve`` and the Spark driver run.
"""

from __future__ import annotations

from groupcoord.host.coordinator_host import CoordinatorHost, HostConfig

__all__ = ["CoordinatorHost", "HostConfig"]
