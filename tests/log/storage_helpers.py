"""Record builders shared by the storage tests."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from groupcoord.coordinator.encoded import EncodedRecord
from groupcoord.log.base import LoadedLog, RecordLog, StorageUnavailableError

LogFactory = Callable[[], RecordLog]
"""Returns a handle on the log under test; every call on the same test gives a handle on the same log."""


def offset(group: str, partition: int, value: int) -> EncodedRecord:
    """An offset-commit-like record (the log never looks inside ``value``)."""
    return EncodedRecord("offset_commit", f"{group}/t/{partition}", f'{{"offset": {value}}}'.encode())


class FaultyLog(RecordLog):
    """Wraps a real log, recording when each commit starts and injecting storage faults on demand.

    ``fail_before`` commits fail before reaching the inner log (nothing durable); ``fail_after`` commits reach the
    inner log and *then* report a failure (durable, acknowledgement lost); ``fail_reads`` makes ``batch_ids_after``
    fail. ``delay`` seconds are spent inside every commit, as a slow disk would.
    """

    def __init__(self, inner: RecordLog, *, delay: float = 0.0) -> None:
        self.inner = inner
        self.delay = delay
        self.fail_before = 0
        self.fail_after = 0
        self.fail_reads = 0
        self.commit_starts: list[float] = []
        self.batch_sizes: list[int] = []

    @property
    def epoch(self) -> int:
        return self.inner.epoch

    @epoch.setter
    def epoch(self, value: int) -> None:
        self.inner.epoch = value

    def version(self) -> int:
        return self.inner.version()

    def append(self, records: Sequence[EncodedRecord], *, expected_version: int, batch_id: str | None = None) -> int:
        return self._commit(lambda: self.inner.append(records, expected_version=expected_version, batch_id=batch_id),
                            len(records))

    def write_snapshot(
        self, records: Sequence[EncodedRecord], *, expected_version: int, batch_id: str | None = None,
        tail: Sequence[EncodedRecord] = (),
    ) -> int:
        return self._commit(
            lambda: self.inner.write_snapshot(records, expected_version=expected_version, batch_id=batch_id,
                                              tail=tail),
            len(records) + len(tail),
        )

    def batch_ids_after(self, version: int) -> dict[int, str | None]:
        if self.fail_reads:
            self.fail_reads -= 1
            raise StorageUnavailableError("injected: log unreadable")
        return self.inner.batch_ids_after(version)

    def load(self) -> LoadedLog:
        return self.inner.load()

    def _commit(self, write: Callable[[], int], size: int) -> int:
        self.commit_starts.append(time.monotonic())
        self.batch_sizes.append(size)
        if self.delay:
            time.sleep(self.delay)
        if self.fail_before:
            self.fail_before -= 1
            raise StorageUnavailableError("injected: no space left on device")
        version = write()
        if self.fail_after:
            self.fail_after -= 1
            raise StorageUnavailableError("injected: I/O error after the commit was written")
        return version
