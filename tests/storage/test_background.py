"""Background checkpoints: requests coalesce when commits outrun the thread, and the newest version is checkpointed."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from groupcoord.storage.background import BackgroundCheckpointer
from groupcoord.storage.files import FileAppend, Part, append_file
from groupcoord.storage.tables import open_or_create


def test_the_checkpointer_skips_versions_it_cannot_keep_up_with_and_ends_at_the_newest(tmp_path: Path) -> None:
    open_or_create(tmp_path / "t", pa.schema([("n", pa.int64())]))
    for version in range(1, 30):
        append_file(tmp_path / "t", FileAppend(version=version, parts=(Part(pa.table({"n": [version]})),)),
                    fsync=False)
    checkpointer = BackgroundCheckpointer(tmp_path / "t", interval=1)
    for committed in range(30):  # far faster than checkpoints are written
        checkpointer.committed(committed)
    checkpointer.close()
    assert checkpointer.written[-1] == 29
    assert checkpointer.written == sorted(set(checkpointer.written))
    assert len(checkpointer.written) < 30  # requests made while one was queued were folded into it
    assert json.loads((tmp_path / "t" / "_delta_log" / "_last_checkpoint").read_text())["version"] == 29
