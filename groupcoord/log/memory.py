"""An in-memory record log, for tests and for ``serve`` experiments without a state root."""

from __future__ import annotations

from collections.abc import Sequence

from groupcoord.coordinator.encoded import EncodedRecord
from groupcoord.log.base import LoadedLog, LogFencedError, RecordLog


class InMemoryRecordLog(RecordLog):
    """Keeps every batch in a list; ``append`` is compare-and-set on the batch count, like the Delta log."""

    def __init__(self) -> None:
        self.batches: list[tuple[EncodedRecord, ...]] = []

    def version(self) -> int:
        """Index of the last batch, -1 when empty."""
        return len(self.batches) - 1

    def append(self, records: Sequence[EncodedRecord], *, expected_version: int) -> int:
        """Append one batch if nobody appended since ``expected_version``."""
        if expected_version != self.version():
            raise LogFencedError(f"expected log version {expected_version}, found {self.version()}")
        self.batches.append(tuple(records))
        return self.version()

    def load(self) -> LoadedLog:
        """Every record ever appended, in order."""
        return LoadedLog(tuple(r for batch in self.batches for r in batch), self.version())
