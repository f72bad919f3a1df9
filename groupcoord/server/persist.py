"""Ready-made ``persist`` seams for :class:`~groupcoord.server.coordinator_service.CoordinatorService`.

``serve`` persists through the commit batcher (``batcher_persister``); tests and storage-less experiments persist
into any :class:`~groupcoord.log.base.RecordLog` directly (``log_persister``). Both encode the core's typed records
with ``groupcoord.coordinator.records.encode_record`` first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from groupcoord.coordinator.records import encode_record
from groupcoord.log.base import RecordLog
from groupcoord.log.batcher import CommitBatcher
from groupcoord.server.coordinator_service import Persist


def log_persister(log: RecordLog) -> Persist:
    """Append each result's records to ``log`` as one batch, on the event loop (meant for in-memory logs)."""

    async def persist(records: Sequence[Any]) -> None:
        log.append([encode_record(record) for record in records], expected_version=log.version())

    return persist


def batcher_persister(batcher: CommitBatcher) -> Persist:
    """Queue each result's records on ``batcher``; returns once the batch holding them is durable."""

    async def persist(records: Sequence[Any]) -> None:
        await batcher.append([encode_record(record) for record in records])

    return persist
