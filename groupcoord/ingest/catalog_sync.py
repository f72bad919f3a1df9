"""Driver side of the Kafka source: copy the cluster's partition counts into the topic catalog, periodically.

The members' group assigns partitions from the catalog, so the catalog must know every partition of the Kafka
topics the job reads. Counts only grow: a topic that shrank on the cluster (impossible in Kafka) or vanished is
left as it is in the catalog.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Mapping
from types import TracebackType

from groupcoord.topics import TopicCatalog, TopicError

log = logging.getLogger("groupcoord.ingest.catalog")


def copy_partition_counts(catalog: TopicCatalog, counts: Mapping[str, int], *,
                          wanted: Callable[[str], bool]) -> dict[str, int]:
    """Create or grow the catalog's topics to ``counts`` for every topic ``wanted`` accepts; return the changes."""
    known = catalog.partition_counts()
    changed: dict[str, int] = {}
    for topic, partitions in sorted(counts.items()):
        if not wanted(topic):
            continue
        current = known.get(topic)
        try:
            if current is None:
                catalog.create(topic, partitions, if_not_exists=True)
            elif partitions > current:
                catalog.alter(topic, partitions)
            else:
                continue
        except TopicError as exc:
            log.warning("cannot copy topic %s (%d partitions) into the catalog: %s", topic, partitions, exc)
            continue
        changed[topic] = partitions
        log.info("catalog: topic %s now has %d partition(s) (from the source)", topic, partitions)
    return changed


def topic_filter(topics: tuple[str, ...] | None, pattern: str | None) -> Callable[[str], bool]:
    """Accept the listed topics, or the topics the pattern matches in full (as Kafka's pattern subscription)."""
    if topics is not None:
        listed = frozenset(topics)
        return listed.__contains__
    assert pattern is not None
    compiled = re.compile(pattern)
    return lambda name: compiled.fullmatch(name) is not None


class CatalogSync:
    """A daemon thread that calls ``copy_partition_counts(catalog, fetch(), ...)`` every ``interval_ms``."""

    def __init__(self, catalog: TopicCatalog, fetch: Callable[[], Mapping[str, int]], *,
                 wanted: Callable[[str], bool], interval_ms: int) -> None:
        self._catalog = catalog
        self._fetch = fetch
        self._wanted = wanted
        self._interval_s = interval_ms / 1000
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sync_once(self) -> dict[str, int]:
        """One copy, now; returns the topics created or grown."""
        return copy_partition_counts(self._catalog, self._fetch(), wanted=self._wanted)

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
        """Stop the thread."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> CatalogSync:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
