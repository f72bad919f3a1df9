"""Where the endpoint learns which topics exist: anything with ``partition_counts()`` (the topic catalog does)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Protocol

STATIC_TOPIC_IDS = uuid.UUID("8f6c1c5e-2f4e-4a53-9a59-6a3c1d0b7e21")
"""The namespace of the ids :class:`StaticTopics` derives from topic names (``uuid5``: the same name, the same id)."""


class TopicSource(Protocol):
    """A source of topic names and partition counts, e.g. ``groupcoord.topics.catalog.TopicCatalog``.

    The endpoint calls it off the event loop, since a catalog may read a Delta table.
    """

    def partition_counts(self) -> Mapping[str, int]:
        """Every topic and its partition count."""

    def topic_ids(self) -> Mapping[str, uuid.UUID]:
        """Every topic's id (Metadata v10+ and the consumer group protocol name topics by id)."""


class StaticTopics:
    """A fixed set of topics, for tests and for serving without a catalog."""

    def __init__(self, partition_counts: Mapping[str, int] | None = None) -> None:
        self._counts = dict(partition_counts or {})

    def partition_counts(self) -> Mapping[str, int]:
        """The topics given at construction."""
        return dict(self._counts)

    def topic_ids(self) -> Mapping[str, uuid.UUID]:
        """An id per topic, derived from its name (stable across restarts)."""
        return {name: uuid.uuid5(STATIC_TOPIC_IDS, name) for name in self._counts}
