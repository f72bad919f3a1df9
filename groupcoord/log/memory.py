"""An in-memory record log, for tests and for ``serve`` experiments without a state root."""

from __future__ import annotations

from collections.abc import Sequence

from groupcoord.coordinator.encoded import EncodedRecord
from groupcoord.log.base import LoadedLog, LogFencedError, RecordLog, split_control


class InMemoryRecordLog(RecordLog):
    """Keeps every batch in a list; ``append`` is compare-and-set on the batch count, like the Delta log.

    ``batches[v]`` is the batch at version ``v``; ``batch_ids[v]`` its tag; ``snapshot_versions`` the versions of
    the snapshot batches.
    """

    def __init__(self) -> None:
        self.batches: list[tuple[EncodedRecord, ...]] = []
        self.batch_ids: list[str | None] = []
        self.snapshot_versions: list[int] = []
        self.snapshot_sizes: list[int] = []

    def version(self) -> int:
        """Index of the last batch, -1 when empty."""
        return len(self.batches) - 1

    def append(self, records: Sequence[EncodedRecord], *, expected_version: int, batch_id: str | None = None) -> int:
        """Append one batch if nobody appended since ``expected_version``."""
        if expected_version != self.version():
            raise LogFencedError(f"expected log version {expected_version}, found {self.version()}")
        self.batches.append(tuple(records))
        self.batch_ids.append(batch_id)
        return self.version()

    def write_snapshot(
        self, records: Sequence[EncodedRecord], *, expected_version: int, batch_id: str | None = None,
        tail: Sequence[EncodedRecord] = (),
    ) -> int:
        """Append ``records`` (then ``tail``) as a snapshot batch."""
        version = self.append([*records, *tail], expected_version=expected_version, batch_id=batch_id)
        self.snapshot_versions.append(version)
        self.snapshot_sizes.append(len(records))
        return version

    def batch_ids_after(self, version: int) -> dict[int, str | None]:
        """Tags of the batches after ``version``."""
        return {v: self.batch_ids[v] for v in range(max(version + 1, 0), len(self.batches))}

    def load(self) -> LoadedLog:
        """The latest snapshot and every record after it, without epoch markers."""
        start = self.snapshot_versions[-1] if self.snapshot_versions else 0
        _, epoch = split_control(r for batch in self.batches for r in batch)
        records, _ = split_control(r for batch in self.batches[start:] for r in batch)
        snapshot_size = self.snapshot_sizes[-1] if self.snapshot_versions else 0
        self.epoch = epoch or 0
        return LoadedLog(tuple(records), self.version(), epoch or 0, len(records) - snapshot_size)
