"""Reading one kind of record straight from a state root's record log (read-only: no lease, no coordinator)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from groupcoord.log.delta import DeltaRecordLog
from groupcoord.state_root import StateRoot


def stored_records(root: StateRoot, kind: str) -> Iterator[tuple[str, dict[str, Any] | None]]:
    """The key and JSON value (``None``: a tombstone) of every record of ``kind`` in the compacted log, in order."""
    loaded = DeltaRecordLog(root.log_path).load().compacted()
    for encoded in loaded.records:
        if encoded.kind == kind:
            yield encoded.key, None if encoded.value is None else json.loads(encoded.value.decode("utf-8"))
