"""The record-log interface every log implements, and its two failure classes."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

from groupcoord.coordinator.encoded import EncodedRecord


class LogFencedError(Exception):
    """Another writer committed at the expected version: this writer is deposed and must step down."""


class StorageUnavailableError(Exception):
    """Storage failed for another reason (no space, read-only, I/O): nothing may be acknowledged; retry later."""


@dataclass(frozen=True)
class LoadedLog:
    """What a load returns: the records to replay, in order, and the log version they reach."""

    records: tuple[EncodedRecord, ...]
    version: int


class RecordLog(ABC):
    """An append-only log of :class:`EncodedRecord` batches with compare-and-set appends.

    Versions count committed batches; an empty log has version -1.
    """

    @abstractmethod
    def version(self) -> int:
        """The version of the last committed batch, re-read from storage."""

    @abstractmethod
    def append(self, records: Sequence[EncodedRecord], *, expected_version: int) -> int:
        """Durably append ``records`` as one batch right after ``expected_version`` and return the new version.

        Raises :class:`LogFencedError` when another batch already took that place, and
        :class:`StorageUnavailableError` for any other storage failure.
        """

    @abstractmethod
    def load(self) -> LoadedLog:
        """The records that rebuild the hard state (latest snapshot plus the tail after it) and their version."""
