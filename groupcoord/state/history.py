"""Opening a materialized table at a point of its history (Delta time travel), with clear errors.

``as_of`` is a Delta version of the table (``int``) or a time (``datetime``, or an ISO-8601 string; a time without
a zone is UTC). A time selects the newest version committed at or before it, where a commit's time is the
modification time of its ``_delta_log`` entry, as in Delta's own time travel. History reaches back to the oldest
version whose log entry Delta's clean-up (``history.retention.hours``) kept; anything older is a
:class:`StateHistoryError` naming that oldest point. A time before the table was created (while its first version
is still kept) is no error: the table was empty then.
"""

from __future__ import annotations

import bisect
import datetime as dt
from pathlib import Path

import pyarrow.fs as pa_fs
from deltalake import DeltaTable
from deltalake.exceptions import DeltaError

from groupcoord.storage.location import TableLocation, as_location
from groupcoord.storage.tables import is_table, table_filesystem
from groupcoord.storage.tables import open_table as latest_table

AsOf = int | dt.datetime | str
"""A point in a table's history: a Delta version, or a time."""

_LOG_DIR = "_delta_log"
_COMMIT_SUFFIX = ".json"


class StateHistoryError(ValueError):
    """``as_of`` lies outside the kept history of a materialized table (too old, or newer than its latest version)."""


def parse_as_of(as_of: AsOf) -> int | dt.datetime:
    """``as_of`` as a version or a tz-aware UTC datetime; raises :class:`StateHistoryError` for anything else."""
    if isinstance(as_of, bool):
        raise StateHistoryError(f"as_of must be a Delta version or a timestamp, not {as_of!r}")
    if isinstance(as_of, int):
        if as_of < 0:
            raise StateHistoryError(f"as_of version {as_of} is negative")
        return as_of
    if isinstance(as_of, str):
        try:
            as_of = dt.datetime.fromisoformat(as_of)
        except ValueError:
            raise StateHistoryError(f"as_of {as_of!r} is neither a Delta version nor an ISO-8601 time") from None
    if isinstance(as_of, dt.datetime):
        return as_of.replace(tzinfo=dt.UTC) if as_of.tzinfo is None else as_of.astimezone(dt.UTC)
    raise StateHistoryError(f"as_of must be a Delta version or a timestamp, not {type(as_of).__name__}")


def open_table(path: Path | TableLocation, as_of: AsOf | None = None) -> DeltaTable | None:
    """The table at ``path`` (a local directory or an S3 location) as of ``as_of`` (latest when ``None``), or
    ``None`` when it did not exist then."""
    if not is_table(path):
        return None
    if as_of is None:
        return latest_table(path)
    point = parse_as_of(as_of)
    history = _History(as_location(path))
    version = history.version_at(point) if isinstance(point, dt.datetime) else history.check_version(point)
    return None if version is None else latest_table(path, version=version)


class _History:
    """The commits of one table still in its Delta log, and their times."""

    def __init__(self, location: TableLocation) -> None:
        self.location = location
        self.name = location.name
        self._files = table_filesystem(location)
        names = (entry.base_name for entry in self._files.get_file_info(pa_fs.FileSelector(_LOG_DIR)))
        self.versions = sorted(
            int(name.removesuffix(_COMMIT_SUFFIX)) for name in names
            if name.endswith(_COMMIT_SUFFIX) and name.removesuffix(_COMMIT_SUFFIX).isdigit()
        )
        self.oldest_index = self._oldest_loadable()

    def commit_time(self, version: int) -> dt.datetime:
        """When ``version`` was committed (the modification time of its log entry)."""
        mtime = self._files.get_file_info(f"{_LOG_DIR}/{version:020d}{_COMMIT_SUFFIX}").mtime
        return mtime.astimezone(dt.UTC) if mtime is not None else dt.datetime.fromtimestamp(0, dt.UTC)

    @property
    def oldest(self) -> int:
        """The oldest version that can still be loaded."""
        return self.versions[self.oldest_index]

    @property
    def latest(self) -> int:
        """The newest version."""
        return self.versions[-1]

    def check_version(self, version: int) -> int:
        """``version`` itself, once it is known to be within the kept history."""
        if version > self.latest:
            raise StateHistoryError(
                f"state table {self.name} has no version {version}; its latest version is {self.latest}")
        if version < self.oldest:
            raise self._too_old(f"version {version}")
        return version

    def version_at(self, when: dt.datetime) -> int | None:
        """The newest version committed at or before ``when`` (``None``: before the table existed)."""
        kept = self.versions[self.oldest_index:]
        times = _LazyTimes(self, kept)
        position = bisect.bisect_right(times, when)
        if position == 0:
            if self.oldest == 0:
                return None
            raise self._too_old(f"time {when.isoformat()}")
        return kept[position - 1]

    def _too_old(self, what: str) -> StateHistoryError:
        return StateHistoryError(
            f"as_of {what} is older than the history of state table {self.name}: the oldest available point is "
            f"version {self.oldest} at {self.commit_time(self.oldest).isoformat()} "
            "(history is kept for spark.groupcoord.history.retention.hours)")

    def _oldest_loadable(self) -> int:
        if not self.versions:
            raise StateHistoryError(f"state table {self.name} has no commits in {self.location}/{_LOG_DIR}")
        if self.versions[0] == 0:
            return 0
        # After log clean-up the first kept entries may precede the checkpoint they need; step to a loadable one.
        for index, version in enumerate(self.versions):
            try:
                latest_table(self.location, version=version)
            except (DeltaError, OSError):
                continue
            return index
        raise StateHistoryError(f"state table {self.name} has no loadable version in {self.location}/{_LOG_DIR}")


class _LazyTimes:
    """The commit times of ``versions`` as a sequence, read only where a binary search looks."""

    def __init__(self, history: _History, versions: list[int]) -> None:
        self._history = history
        self._versions = versions

    def __len__(self) -> int:
        return len(self._versions)

    def __getitem__(self, index: int) -> dt.datetime:
        return self._history.commit_time(self._versions[index])
