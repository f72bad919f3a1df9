"""Change detection on the topic catalog, for the running coordinator's metadata refresh.

The coordinator calls :meth:`CatalogWatcher.poll` every ``spark.groupcoord.metadata.refresh.ms``; it costs one read of
new Delta log entries, and returns the partition counts only when the catalog version moved, so the core's
metadata-change entry point runs only on a real change.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from groupcoord.topics.catalog import TopicCatalog


@dataclass(frozen=True)
class CatalogChange:
    """The catalog at a new version: every topic's partition count and id, and what differs from the last poll."""

    version: int
    partition_counts: dict[str, int]
    topic_ids: dict[str, uuid.UUID]
    added: frozenset[str]
    grown: frozenset[str]


class CatalogWatcher:
    """Remembers the last catalog version seen and reports what changed since."""

    def __init__(self, catalog: TopicCatalog) -> None:
        self._catalog = catalog
        self._version: int | None = None
        self._counts: dict[str, int] = {}

    @property
    def interval_s(self) -> float:
        """How often to poll: ``spark.groupcoord.metadata.refresh.ms`` in seconds."""
        return self._catalog.config.metadata_refresh_ms / 1000.0

    def poll(self) -> CatalogChange | None:
        """The change since the previous poll (the first poll always reports), or ``None`` if nothing changed."""
        version, topics = self._catalog.versioned_topics()
        if version == self._version:
            return None
        counts = {name: info.partitions for name, info in topics.items()}
        change = CatalogChange(
            version=version,
            partition_counts=counts,
            topic_ids={name: uuid.UUID(info.topic_id) for name, info in topics.items()},
            added=frozenset(name for name in counts if name not in self._counts),
            grown=frozenset(name for name, n in counts.items() if name in self._counts and n > self._counts[name]),
        )
        self._version, self._counts = version, counts
        return change
