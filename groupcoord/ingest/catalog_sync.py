"""Driver side of a Kafka source: copy the cluster's partition counts into the topic catalog, periodically.

The members' group assigns partitions from the catalog, so the catalog must know every partition of the Kafka
topics the job reads. The copy is the ``groupcoord`` source's own (:meth:`~groupcoord.source.log_view.LogView.
sync_catalog`: counts only grow); this thread repeats it for the members engine, whose driver has no trigger to
repeat it at.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable
from types import TracebackType

from groupcoord.source.log_view import LogView

log = logging.getLogger("groupcoord.ingest.catalog")


def topic_filter(topics: tuple[str, ...] | None, pattern: str | None) -> Callable[[str], bool]:
    """Accept the listed topics, or the topics the pattern matches in full (as Kafka's pattern subscription)."""
    if topics is not None:
        listed = frozenset(topics)
        return listed.__contains__
    assert pattern is not None
    compiled = re.compile(pattern)
    return lambda name: compiled.fullmatch(name) is not None


class CatalogSync:
    """A daemon thread that calls ``view.sync_catalog(wanted)`` every ``interval_ms``; it owns ``view`` and closes
    it when stopped."""

    def __init__(self, view: LogView, *, wanted: Callable[[str], bool], interval_ms: int) -> None:
        self._view = view
        self._wanted = wanted
        self._interval_s = interval_ms / 1000
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sync_once(self) -> None:
        """One copy, now."""
        self._view.sync_catalog(self._wanted)

    def start(self) -> CatalogSync:
        """Copy once (errors propagate, so a wrong source fails the job at once), then keep copying."""
        self.sync_once()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="groupcoord-catalog-sync")
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self._interval_s):
            try:
                self.sync_once()
            except Exception as exc:  # a transient source outage must not end the job
                log.warning("catalog sync failed: %s", exc)

    def stop(self) -> None:
        """Stop the thread and close the view."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._view.close()

    def __enter__(self) -> CatalogSync:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
