"""Record builders shared by the storage tests."""

from __future__ import annotations

from collections.abc import Callable

from groupcoord.coordinator.encoded import EncodedRecord
from groupcoord.log.base import RecordLog

LogFactory = Callable[[], RecordLog]
"""Returns a handle on the log under test; every call on the same test gives a handle on the same log."""


def offset(group: str, partition: int, value: int) -> EncodedRecord:
    """An offset-commit-like record (the log never looks inside ``value``)."""
    return EncodedRecord("offset_commit", f"{group}/t/{partition}", f'{{"offset": {value}}}'.encode())
