"""The record-log interface every log implements, and its two failure classes.

A log is a sequence of *batches*; each batch is committed atomically at a version strictly above the previous one.
Besides the core's records a log holds two kinds of batches of its own:

- *epoch markers* (:func:`epoch_record`), appended by :meth:`RecordLog.takeover` as a new lease holder's first act,
  so that a deposed writer's next compare-and-set append fails;
- *snapshots* (:meth:`RecordLog.write_snapshot`): records that rebuild the whole hard state. :meth:`RecordLog.load`
  returns the latest snapshot plus the batches after it, so load time follows the state size, not the history.

Epoch markers are control records: :meth:`RecordLog.load` drops them from ``records`` and reports the latest epoch
in :attr:`LoadedLog.epoch`.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType

from groupcoord.coordinator.encoded import EncodedRecord

EPOCH_KIND = "log_epoch"
"""``kind`` of the epoch marker records that only the log itself interprets."""


class LogFencedError(Exception):
    """Another writer committed at the expected version: this writer is deposed and must step down."""


class StorageUnavailableError(Exception):
    """Storage failed for another reason (no space, read-only, I/O): nothing may be acknowledged; retry later."""


@dataclass(frozen=True)
class LoadedLog:
    """What a load returns: the records to replay, in order, the log version they reach, and the writer epoch.

    ``records`` start with the latest snapshot (if any) and never contain epoch markers; ``epoch`` is the epoch of
    the latest epoch marker (0 when no holder ever took over); ``tail_records`` counts the records after the
    snapshot, which the writer compares with ``log.snapshot.interval``.
    """

    records: tuple[EncodedRecord, ...]
    version: int
    epoch: int = 0
    tail_records: int = 0

    def compacted(self) -> LoadedLog:
        """The same load with only the latest record per ``(kind, key)``, in the order of those latest records.

        Replaying it builds the same hard state, because every record sets or deletes exactly the state its
        ``(kind, key)`` names (see :class:`EncodedRecord`): a record followed by a later one of the same identity
        has no effect on the result. A load after a long tail (many commits of the same partitions) then replays
        one record per key instead of one per commit. ``tail_records`` keeps counting the log's records.
        """
        seen: set[tuple[str, str]] = set()
        latest: list[EncodedRecord] = []
        for record in reversed(self.records):
            identity = (record.kind, record.key)
            if identity not in seen:
                seen.add(identity)
                latest.append(record)
        latest.reverse()
        return replace(self, records=tuple(latest))


def epoch_record(epoch: int) -> EncodedRecord:
    """The marker a new holder appends as its first act (``kind`` :data:`EPOCH_KIND`)."""
    return EncodedRecord(EPOCH_KIND, "", json.dumps({"epoch": epoch}).encode())


def marker_epoch(record: EncodedRecord) -> int:
    """The epoch carried by an epoch marker."""
    assert record.value is not None
    epoch = json.loads(record.value)["epoch"]
    assert isinstance(epoch, int)
    return epoch


def split_control(records: Iterable[EncodedRecord]) -> tuple[list[EncodedRecord], int | None]:
    """Separate the core's records from epoch markers; returns them and the last marker's epoch (or ``None``)."""
    kept: list[EncodedRecord] = []
    epoch: int | None = None
    for record in records:
        if record.kind == EPOCH_KIND:
            epoch = marker_epoch(record)
        else:
            kept.append(record)
    return kept, epoch


class RecordLog(ABC):
    """An append-only log of :class:`EncodedRecord` batches with compare-and-set appends.

    Versions increase with every committed batch (an empty log has version -1); a log may also skip versions (the
    Delta log's maintenance commits take versions too), so callers use the version an append returns.
    ``epoch`` is the writer epoch stamped on this instance's appends: the loaded one after :meth:`load`, the new one
    after :meth:`takeover`.
    """

    epoch: int = 0
    last_commit_phases: Mapping[str, float] = MappingProxyType({})
    """Seconds each phase of the last commit took (a log that measures them sets a new mapping per commit; the
    commit batcher reports it in :class:`~groupcoord.log.batcher.CommitTiming`)."""

    @abstractmethod
    def version(self) -> int:
        """The version of the last committed batch, re-read from storage."""

    @abstractmethod
    def append(self, records: Sequence[EncodedRecord], *, expected_version: int, batch_id: str | None = None) -> int:
        """Durably append ``records`` as one batch right after ``expected_version`` and return the new version.

        ``batch_id`` tags the commit so that a writer whose commit outcome is unknown can look for it with
        :meth:`batch_ids_after`. Raises :class:`LogFencedError` when another batch already took that place, and
        :class:`StorageUnavailableError` for any other storage failure.
        """

    @abstractmethod
    def write_snapshot(
        self, records: Sequence[EncodedRecord], *, expected_version: int, batch_id: str | None = None,
        tail: Sequence[EncodedRecord] = (),
    ) -> int:
        """Append ``records`` as a snapshot: a batch that alone rebuilds the hard state. Same contract as append.

        ``tail`` holds records produced after the snapshot was taken, committed in the same batch after it (the
        commit batcher folds the writes queued behind a snapshot into its commit instead of giving the snapshot a
        commit of its own); a load counts them as the tail after the snapshot.
        """

    def prepare(self, records: Sequence[EncodedRecord], *, version: int | None = None) -> Sequence[EncodedRecord]:
        """Do the per-record work of writing ``records`` ahead of their commit (the commit batcher calls it in a
        thread for a snapshot while earlier batches commit) and return what to pass to :meth:`write_snapshot`
        instead: the same records, maybe with that work attached. ``version`` is where the snapshot is expected
        to commit (``None``: unknown); the work must stay valid, or be ignored, at any other version. This
        default does nothing."""
        return records

    @abstractmethod
    def batch_ids_after(self, version: int) -> dict[int, str | None]:
        """The ``batch_id`` of every batch committed after ``version``, by version (``None`` when untagged)."""

    @abstractmethod
    def load(self) -> LoadedLog:
        """The records that rebuild the hard state (latest snapshot plus the tail after it) and their version."""

    def takeover(self, epoch: int, *, expected_version: int) -> int:
        """Append the epoch marker of a new holder and stamp ``epoch`` on this instance's later appends.

        Call it right after :meth:`load`, with the lease epoch; a deposed writer that still expects the old version
        then fails its next append with :class:`LogFencedError`. An epoch not above the loaded one is refused.
        """
        if epoch <= self.epoch:
            raise LogFencedError(f"epoch {epoch} is not newer than the log's epoch {self.epoch}")
        previous, self.epoch = self.epoch, epoch
        try:
            return self.append([epoch_record(epoch)], expected_version=expected_version, batch_id=f"epoch-{epoch}")
        except BaseException:
            self.epoch = previous
            raise
