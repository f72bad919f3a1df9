"""The write path's storage end: a result's records made durable, in call order, then materialized.

:class:`DurableWriter` is what ``serve`` persists through: it encodes the core's typed records, queues them on the
commit batcher (one commit in flight, the writes that arrive meanwhile form the next batch), hands every committed
batch to the materializer, and starts a snapshot every ``snapshot_interval`` records. :func:`log_persister` appends
straight to a :class:`~groupcoord.log.base.RecordLog`, for tests and storage-less experiments.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence

from groupcoord.coordinator.records import Record, chunks_of, encode_records
from groupcoord.log.base import RecordLog
from groupcoord.log.batcher import CommitBatcher
from groupcoord.log.lease import utc_now
from groupcoord.runtime.crash_points import crash_point
from groupcoord.runtime.service import Persist
from groupcoord.state.materializer import CommittedBatch, Materializer

log = logging.getLogger("groupcoord.runtime.writer")


def log_persister(record_log: RecordLog) -> Persist:
    """Append each result's records to ``record_log`` as one batch, on the event loop (meant for in-memory logs)."""

    async def persist(records: Sequence[Record]) -> None:
        record_log.append(encode_records(records), expected_version=record_log.version())

    return persist


class DurableWriter:
    """Persists the core's records through ``batcher`` for one lease term (epoch ``epoch``).

    ``snapshot_records`` returns the core's state as records (taken on the loop when a snapshot starts, so it holds
    exactly the writes queued before it). Call :meth:`persist` in the order results leave the core.
    """

    def __init__(self, batcher: CommitBatcher, materializer: Materializer, *, epoch: int, snapshot_interval: int,
                 snapshot_records: Callable[[], Sequence[Record]], records_since_snapshot: int = 0) -> None:
        self.batcher = batcher
        self.materializer = materializer
        self.epoch = epoch
        self.snapshot_interval = snapshot_interval
        self.records_since_snapshot = records_since_snapshot
        self._snapshot_records = snapshot_records
        self._snapshot: asyncio.Task[None] | None = None

    @property
    def healthy(self) -> bool:
        """False while storage refuses commits: writes are then refused up front (see the write guard)."""
        return self.batcher.healthy

    async def persist(self, records: Sequence[Record]) -> None:
        """Durable through the batcher, then materialized (blocks of offsets handed over whole); maybe starts a
        snapshot."""
        encoded = encode_records(records)
        if self.batcher.pending:
            crash_point("batch-assembly")
        version = await self.batcher.append(encoded)
        self.materializer.submit(CommittedBatch(records=chunks_of(records), log_version=version, epoch=self.epoch,
                                                committed_at=utc_now()))
        self.records_since_snapshot += len(encoded)
        if self.records_since_snapshot >= self.snapshot_interval and self._snapshot is None:
            self._snapshot = asyncio.create_task(self._write_snapshot(), name="log-snapshot")

    async def _write_snapshot(self) -> None:
        records = encode_records(self._snapshot_records())
        try:
            version = await self.batcher.snapshot(records)
            self.materializer.submit(CommittedBatch(records=tuple(records), log_version=version, epoch=self.epoch,
                                                    committed_at=utc_now(), snapshot=True))
            self.records_since_snapshot = 0
            log.info("wrote a snapshot of %d records at log version %d", len(records), version)
        except Exception as exc:
            log.warning("snapshot failed (%s); will retry after more records", exc)
        finally:
            self._snapshot = None

    async def close(self, *, drain: bool) -> None:
        """Stop: cancel a snapshot under way, then close the batcher (draining queued writes when ``drain``)."""
        if self._snapshot is not None:
            self._snapshot.cancel()
        await self.batcher.close(drain=drain)
