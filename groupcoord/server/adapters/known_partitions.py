"""Kafka's metadata check before OffsetCommit and OffsetDelete reach the coordinator.

A Kafka broker answers UNKNOWN_TOPIC_OR_PARTITION for every partition of a request that does not exist in its
metadata (an unknown topic, a partition past the end, a negative one) and hands only the rest to its group
coordinator; when nothing is left of an OffsetCommit the coordinator is not asked at all, so no group is created.
This endpoint does the same against its topic catalog: :class:`KnownTopics` keeps the catalog's partition counts,
re-read (off the event loop) only when a request names a partition it does not know, since topics only grow.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from groupcoord.protocol.errors import ErrorCode, Errors
from groupcoord.protocol.requests import GroupRequest
from groupcoord.protocol.responses import PartitionError, TopicPartitionErrors
from groupcoord.runtime.service import CoordinatorService
from groupcoord.server.adapters.core import CoreAdapter, CoreMapping
from groupcoord.server.api import RequestContext
from groupcoord.server.topics import TopicSource

TopicPartitionKey = tuple[str, int]
"""(topic, partition)."""


class KnownTopics:
    """The partitions that exist, from a :class:`TopicSource`, cached until a request names one the cache lacks."""

    def __init__(self, source: TopicSource) -> None:
        self._source = source
        self._counts: Mapping[str, int] = {}

    def exists(self, topic: str, partition: int) -> bool:
        """Whether ``topic``-``partition`` exists as of the last read."""
        return 0 <= partition < self._counts.get(topic, 0)

    async def learn(self, partitions: Iterable[TopicPartitionKey]) -> None:
        """Re-read the source when one of ``partitions`` is not known yet."""
        if not all(self.exists(topic, partition) for topic, partition in partitions):
            self._counts = dict(await asyncio.to_thread(self._source.partition_counts))


class PartitionScreening(CoreMapping, Protocol):
    """A :class:`CoreMapping` whose requests name partitions that must exist."""

    def named_partitions(self, ctx: RequestContext) -> list[TopicPartitionKey]:
        """Every partition ``ctx.body`` names, in request order (duplicates kept)."""

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
        await self._known.learn(self._screening.named_partitions(ctx))
        return await super().handle(ctx)

    def error_response(self, ctx: RequestContext, error: ErrorCode) -> Any:
        """``error`` for every named partition (a request refused as a whole is not screened: while the coordinator
        loads, every partition gets the loading error, as from Kafka)."""
        requests = self._screening.unscreened(ctx)
        return self._screening.to_wire(ctx, requests, [error] * len(requests))


def with_unknown(named: Sequence[TopicPartitionKey], sent: Iterable[TopicPartitionKey],
                 answered: Sequence[TopicPartitionErrors]) -> tuple[TopicPartitionErrors, ...]:
    """``answered`` (the coordinator's errors for the ``sent`` partitions) plus UNKNOWN_TOPIC_OR_PARTITION for each
    entry of ``named`` that was not sent, per topic in the order topics are first named (unknown partitions first
    within a topic, as Kafka's response builder adds them)."""
    unsent = Counter(named)
    unsent.subtract(sent)
    unknown: dict[str, list[PartitionError]] = {}
    for topic, partition in named:
        if unsent[(topic, partition)] > 0:
            unsent[(topic, partition)] -= 1
            unknown.setdefault(topic, []).append(PartitionError(partition, Errors.UNKNOWN_TOPIC_OR_PARTITION))
    by_topic: dict[str, list[PartitionError]] = {}
    for errors in answered:
        by_topic.setdefault(errors.name, []).extend(errors.partitions)
    order = list(dict.fromkeys([*(name for name, _ in named), *by_topic]))
    return tuple(TopicPartitionErrors(name, (*unknown.get(name, ()), *by_topic.get(name, ())))
                 for name in order if name in unknown or name in by_topic)
