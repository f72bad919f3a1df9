"""The state root: one local directory holding every Delta table of a coordinator, and its format marker.

Layout::

    <root>/_groupcoord/format.json   {"format": 3}
    <root>/log/                      the coordinator's record log (Delta)
    <root>/lease/                    the election lease (Delta)
    <root>/catalog/                  the topic catalog (Delta)
    <root>/topics/<name>/            one embedded topic log per topic (Delta)
    <root>/state/<table>/            materialized, queryable state (offsets, groups, members, assignments)
    <root>/partition_weights/        optional per-partition weights for the weighted assignor

Opening a root of an older format migrates it first (:mod:`groupcoord.state_format`), then rewrites the marker.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from groupcoord.state_format import STATE_FORMAT_VERSION, migrate_tables

__all__ = ["MARKER_DIR", "MARKER_FILE", "STATE_FORMAT_VERSION", "StateRoot", "StateRootError"]

MARKER_DIR = "_groupcoord"
MARKER_FILE = "format.json"

_URI = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")


class StateRootError(Exception):
    """The path is not usable as a state root; the message says why in one line."""


@dataclass(frozen=True)
class StateRoot:
    """A validated state root directory. Build it with :meth:`open`."""

    path: Path

    @classmethod
    def open(cls, location: str | Path, *, create: bool = False) -> StateRoot:
        """Open the state root at ``location``.

        With ``create``, a missing directory (or an empty one) becomes a new state root. A root of an older format
        is migrated to the current one. A non-local URI, an existing non-empty directory without the marker, or a
        newer format is refused with :class:`StateRootError`.
        """
        text = str(location)
        if _URI.match(text) and not text.startswith("file://"):
            raise StateRootError(
                f"state root {text!r} is not a local path; this version proves conditional commits only on a "
                "local filesystem"
            )
        path = Path(text.removeprefix("file://")).expanduser().absolute()
        marker = path / MARKER_DIR / MARKER_FILE
        if marker.is_file():
            found = cls._check_format(marker)
            if found < STATE_FORMAT_VERSION:
                migrate_tables(path, found)
                _write_marker(marker)
            return cls(path)
        if path.exists() and not path.is_dir():
            raise StateRootError(f"state root {path} exists and is not a directory")
        # A directory holding only ``_groupcoord/`` is a root another process is creating right now.
        if path.is_dir() and any(child.name != MARKER_DIR for child in path.iterdir()):
            raise StateRootError(f"{path} is not a groupcoord state root (no {MARKER_DIR}/{MARKER_FILE})")
        if not create:
            raise StateRootError(f"state root {path} does not exist")
        marker.parent.mkdir(parents=True, exist_ok=True)
        _write_marker(marker)
        return cls(path)

    @staticmethod
    def _check_format(marker: Path) -> int:
        try:
            found = json.loads(marker.read_text(encoding="utf-8"))["format"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise StateRootError(f"unreadable state format marker {marker}: {exc}") from None
        if not isinstance(found, int) or found > STATE_FORMAT_VERSION:
            raise StateRootError(
                f"state root {marker.parent.parent} has format {found}, newer than this groupcoord supports "
                f"({STATE_FORMAT_VERSION}); upgrade groupcoord"
            )
        return found

    @property
    def format_version(self) -> int:
        """The format recorded in the root's marker (the current one, once :meth:`open` returned)."""
        return int(json.loads((self.path / MARKER_DIR / MARKER_FILE).read_text(encoding="utf-8"))["format"])

    @property
    def log_path(self) -> Path:
        """The coordinator's record log table."""
        return self.path / "log"

    @property
    def lease_path(self) -> Path:
        """The election lease table."""
        return self.path / "lease"

    @property
    def catalog_path(self) -> Path:
        """The topic catalog table."""
        return self.path / "catalog"

    def topic_path(self, topic: str) -> Path:
        """The embedded topic log table of ``topic`` (the name must already be validated)."""
        return self.path / "topics" / topic

    def state_table_path(self, table: str) -> Path:
        """A materialized state table (``offsets``, ``groups``, ``members``, ``assignments``)."""
        return self.path / "state" / table

    @property
    def partition_weights_path(self) -> Path:
        """The optional partition weights table read by the weighted assignor."""
        return self.path / "partition_weights"


def _write_marker(marker: Path) -> None:
    """Write the current format into ``marker`` atomically (a per-process temporary file, then a rename)."""
    tmp = marker.with_name(f"{MARKER_FILE}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"format": STATE_FORMAT_VERSION}) + "\n", encoding="utf-8")
    tmp.replace(marker)
