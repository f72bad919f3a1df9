"""Keeping an open Delta table handle current for about the price of one existence check when nothing changed.

delta-rs's ``update_incremental`` lists the table's ``_delta_log`` to find new commits: about 2 ms on local disk for
a few hundred log entries, a LIST request on S3. A reader that asks again and again whether a table moved (the
Fetch long-poll asks every 100 ms per consumer, and also asks the catalog) pays it each time although the answer is
almost always no. Delta commits are numbered without gaps, so "did the table move?" is "does the commit file after
the handle's version exist?": one ``stat`` locally, one HEAD on S3, and only a yes pays the listing.

One case that check cannot see: log cleanup may delete the commit files of old versions once a checkpoint covers
them. A handle left behind that far (a reader idle for longer than the log retention while writers went on) would
find no next file and believe the table unchanged; so the listing also runs at least every :data:`FULL_REFRESH_S`.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pyarrow.fs as pa_fs
from deltalake import DeltaTable

from groupcoord.storage.commits import commit_name
from groupcoord.storage.tables import Where, table_filesystem

FULL_REFRESH_S = 5.0
"""Longest time between two listings of the log, whatever the existence checks say."""


def next_commit_exists(filesystem: pa_fs.FileSystem, version: int) -> bool:
    """True if the table whose :func:`~groupcoord.storage.tables.table_filesystem` is ``filesystem`` has a commit
    after ``version``."""
    return bool(filesystem.get_file_info(commit_name(version + 1)).type != pa_fs.FileType.NotFound)


class TableFreshness:
    """Refreshes one table's handle only when a newer commit exists (see the module docstring). Not thread-safe:
    callers hold the lock that guards their handle."""

    def __init__(self, where: Where, *, full_refresh_s: float = FULL_REFRESH_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._filesystem = table_filesystem(where)
        self._full_refresh_s = full_refresh_s
        self._clock = clock
        self._next_listing = clock() + full_refresh_s

    def refresh(self, table: DeltaTable) -> None:
        """Bring ``table`` up to date if it moved since its version (or the periodic listing is due)."""
        now = self._clock()
        if now < self._next_listing and not next_commit_exists(self._filesystem, table.version()):
            return
        table.update_incremental()
        self._next_listing = now + self._full_refresh_s
