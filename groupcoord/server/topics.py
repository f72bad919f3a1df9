"""Where the endpoint learns which topics exist: anything with ``partition_counts()`` (the topic catalog does)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol


class TopicSource(Protocol):
    """A source of topic names and partition counts, e.g. ``groupcoord.topics.catalog.TopicCatalog``.

    The endpoint calls it off the event loop, since a catalog may read a Delta table.
    """

    def partition_counts(self) -> Mapping[str, int]:
        """Every topic and its partition count."""


class StaticTopics:
    """A fixed set of topics, for tests and for serving without a catalog."""

    def __init__(self, partition_counts: Mapping[str, int] | None = None) -> None:
        self._counts = dict(partition_counts or {})

    def partition_counts(self) -> Mapping[str, int]:
        """The topics given at construction."""
        return dict(self._counts)
