"""Kafka's metadata check before OffsetCommit and OffsetDelete reach the coordinator, and topic ids for the offset
APIs' v10 forms.

A Kafka broker answers UNKNOWN_TOPIC_OR_PARTITION for every partition of a request that does not exist in its
metadata (an unknown topic, a partition past the end, a negative one) and hands only the rest to its group
coordinator; when nothing is left of an OffsetCommit the coordinator is not asked at all, so no group is created.
From v10, OffsetCommit and OffsetFetch name topics by id, and an id the broker does not know is UNKNOWN_TOPIC_ID.
This endpoint does the same against its topic catalog: :class:`KnownTopics` keeps the catalog's partition counts and
topic ids, re-read (off the event loop) only when a request names a partition or an id it does not know, since
topics only grow.

The errors the check finds go first in the response, topic by topic in request order, and the coordinator's answers
follow (within a topic, the check's partitions come first): the order of Kafka's response builder.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from groupcoord.protocol.errors import ErrorCode, Errors
from groupcoord.protocol.requests import GroupRequest
from groupcoord.protocol.responses import PartitionError
from groupcoord.runtime.service import CoordinatorService
from groupcoord.server.adapters.core import CoreAdapter, CoreMapping
from groupcoord.server.api import RequestContext
from groupcoord.server.topics import TopicSource

TopicRef = str | uuid.UUID
"""A topic as a request names it: by name, or by id (the v10 forms of OffsetCommit and OffsetFetch)."""
TopicPartitionKey = tuple[TopicRef, int]
"""(topic, partition)."""

_Key = TypeVar("_Key")


class KnownTopics:
    """The partitions and topic ids that exist, from a :class:`TopicSource`, cached until a request names one the
    cache lacks."""

    def __init__(self, source: TopicSource) -> None:
        self._source = source
        self._counts: Mapping[str, int] = {}
        self._names: Mapping[uuid.UUID, str] = {}
        self._ids: Mapping[str, uuid.UUID] = {}

    def name(self, topic: TopicRef) -> str | None:
        """The name of ``topic``: itself when it is a name, ``None`` for an id not known as of the last read."""
        return topic if isinstance(topic, str) else self._names.get(topic)

    def topic_id(self, name: str) -> uuid.UUID | None:
        """The id of topic ``name``, ``None`` when it is not known as of the last read."""
        return self._ids.get(name)

    def exists(self, topic: TopicRef, partition: int) -> bool:
        """Whether ``topic``-``partition`` exists as of the last read."""
        name = self.name(topic)
        return name is not None and 0 <= partition < self._counts.get(name, 0)

    def missing_error(self, topic: TopicRef) -> ErrorCode:
        """The error of a partition of ``topic`` that does not exist: UNKNOWN_TOPIC_ID for an id that names no
        topic, else UNKNOWN_TOPIC_OR_PARTITION."""
        return Errors.UNKNOWN_TOPIC_OR_PARTITION if self.name(topic) is not None else Errors.UNKNOWN_TOPIC_ID

    async def learn(self, partitions: Iterable[TopicPartitionKey]) -> None:
        """Re-read the source when one of ``partitions`` is not known yet."""
        if not all(self.exists(topic, partition) for topic, partition in partitions):
            await self._reread()

    async def learn_ids(self, names: Iterable[str]) -> None:
        """Re-read the source when one of the topics ``names`` has no id yet."""
        if not all(name in self._ids for name in names):
            await self._reread()

    async def _reread(self) -> None:
        counts, ids = await asyncio.to_thread(lambda: (self._source.partition_counts(), self._source.topic_ids()))
        self._counts = dict(counts)
        self._ids = dict(ids)
        self._names = {topic_id: name for name, topic_id in ids.items()}


class PartitionScreening(CoreMapping, Protocol):
    """A :class:`CoreMapping` whose requests name partitions that must exist."""

    def checked_partitions(self, ctx: RequestContext) -> list[TopicPartitionKey]:
        """The partitions of ``ctx.body`` that must be known before :meth:`to_core` screens it."""

    def unscreened(self, ctx: RequestContext) -> Sequence[GroupRequest]:
        """The core requests of every named partition, existing or not (what :meth:`to_core` screens)."""


class KnownPartitionsAdapter(CoreAdapter):
    """A :class:`CoreAdapter` that brings :class:`KnownTopics` up to date before its mapping screens a request."""

    def __init__(self, service: CoordinatorService, mapping: PartitionScreening, known: KnownTopics) -> None:
        super().__init__(service, mapping)
        self._screening = mapping
        self._known = known

    async def handle(self, ctx: RequestContext) -> Any:
        """Learn the named partitions, then answer as a :class:`CoreAdapter` does."""
        await self._known.learn(self._screening.checked_partitions(ctx))
        return await super().handle(ctx)

    def error_response(self, ctx: RequestContext, error: ErrorCode) -> Any:
        """``error`` for every named partition (a request refused as a whole is not screened: while the coordinator
        loads, every partition gets the loading error, as from Kafka)."""
        requests = self._screening.unscreened(ctx)
        return self._screening.to_wire(ctx, requests, [error] * len(requests))


def with_unknown(named: Sequence[tuple[_Key, int]], sent: Iterable[tuple[_Key, int]],
                 answered: Sequence[tuple[_Key, Sequence[PartitionError]]],
                 missing: Mapping[_Key, ErrorCode] | None = None) -> list[tuple[_Key, list[PartitionError]]]:
    """``answered`` (the coordinator's errors for the ``sent`` partitions) plus, for each entry of ``named`` that was
    not sent, its ``missing`` error (UNKNOWN_TOPIC_OR_PARTITION by default), in Kafka's order (see the module)."""
    unsent = Counter(named)
    unsent.subtract(sent)
    unknown: dict[_Key, list[PartitionError]] = {}
    for topic, partition in named:
        if unsent[(topic, partition)] > 0:
            unsent[(topic, partition)] -= 1
            error = (missing or {}).get(topic, Errors.UNKNOWN_TOPIC_OR_PARTITION)
            unknown.setdefault(topic, []).append(PartitionError(partition, error))
    merged = {topic: list(errors) for topic, errors in unknown.items()}
    for topic, errors in answered:
        merged.setdefault(topic, []).extend(errors)
    return list(merged.items())
