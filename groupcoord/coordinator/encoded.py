"""The storage form of a record: the contract between the pure core and every record log.

The core turns its typed records into :class:`EncodedRecord` (``groupcoord.coordinator.records``) and back; logs
store and return them without looking inside ``value``.
"""

from __future__ import annotations

from typing import NamedTuple


class EncodedRecord(NamedTuple):
    """One record as stored (a named tuple: the log writes and loads one per record, and a tuple is built several
    times faster than a frozen dataclass).

    ``kind`` names the record type (``"offset_commit"``, ``"group_metadata"``...); ``key`` is the identity that
    compaction keeps (the latest record per ``(kind, key)`` wins); ``value`` is the UTF-8 JSON payload, or ``None``
    for a tombstone; ``format_version`` is the record format the value was written in.
    """

    kind: str
    key: str
    value: bytes | None
    format_version: int = 1

    @property
    def is_tombstone(self) -> bool:
        """True when this record deletes its key."""
        return self.value is None
