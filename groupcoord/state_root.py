"""The state root: one local directory or S3 prefix holding every Delta table of a coordinator, and its format marker.

Layout::

    <root>/_groupcoord/format.json   {"format": 3}
    <root>/log/                      the coordinator's record log (Delta)
    <root>/lease/                    the election lease (Delta)
    <root>/catalog/                  the topic catalog (Delta)
    <root>/topics/<name>/            one embedded topic log per topic (Delta)
    <root>/state/<table>/            materialized, queryable state (offsets, groups, members, assignments)
    <root>/partition_weights/        optional per-partition weights for the weighted assignor

Opening a root of an older format migrates it first (:mod:`groupcoord.state_format`), then rewrites the marker.
A root on S3 (``s3://bucket/prefix`` or ``s3a://``) has the same layout; its tables are opened with the location's
storage options (:class:`~groupcoord.storage.location.TableLocation`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groupcoord.state_format import STATE_FORMAT_VERSION, migrate_tables
from groupcoord.storage import objects
from groupcoord.storage.location import LocationError, TableLocation, parse_location

__all__ = ["MARKER_DIR", "MARKER_FILE", "STATE_FORMAT_VERSION", "StateRoot", "StateRootError"]

MARKER_DIR = "_groupcoord"
MARKER_FILE = "format.json"
_MARKER = f"{MARKER_DIR}/{MARKER_FILE}"


class StateRootError(Exception):
    """The path is not usable as a state root; the message says why in one line."""


@dataclass(frozen=True)
class StateRoot:
    """A validated state root: a local directory or an S3 prefix. Build it with :meth:`open`."""

    location: TableLocation

    @classmethod
    def open(cls, location: str | Path | TableLocation, *, create: bool = False,
             storage: Mapping[str, Any] | None = None) -> StateRoot:
        """Open the state root at ``location``: a local path, or an ``s3://`` / ``s3a://`` URI.

        With ``create``, a missing directory (or an empty one, or an empty S3 prefix) becomes a new state root. A
        root of an older format is migrated to the current one. Another URI scheme, an existing non-empty
        directory without the marker, or a newer format is refused with :class:`StateRootError`. ``storage`` holds
        the ``storage.*`` configuration values (endpoint, region, credential files) for an S3 root; the ``AWS_*``
        environment variables fill in the rest (:func:`groupcoord.storage.location.s3_options`).
        """
        try:
            where = location if isinstance(location, TableLocation) else parse_location(location, settings=storage)
        except LocationError as exc:
            raise StateRootError(f"state root: {exc}") from None
        if where.is_local:
            return cls._open_local(where.local_path, create=create)
        return cls._open_object_store(where, create=create)

    @classmethod
    def _open_local(cls, path: Path, *, create: bool) -> StateRoot:
        marker = path / MARKER_DIR / MARKER_FILE
        root = cls(TableLocation(str(path)))
        if marker.is_file():
            found = cls._check_format(_read_marker(marker.read_bytes, marker), marker)
            if found < STATE_FORMAT_VERSION:
                migrate_tables(path, found)
                _write_marker(marker)
            return root
        if path.exists() and not path.is_dir():
            raise StateRootError(f"state root {path} exists and is not a directory")
        # A directory holding only ``_groupcoord/`` is a root another process is creating right now.
        if path.is_dir() and any(child.name != MARKER_DIR for child in path.iterdir()):
            raise StateRootError(f"{path} is not a groupcoord state root (no {_MARKER})")
        if not create:
            raise StateRootError(f"state root {path} does not exist")
        marker.parent.mkdir(parents=True, exist_ok=True)
        _write_marker(marker)
        return root

    @classmethod
    def _open_object_store(cls, location: TableLocation, *, create: bool) -> StateRoot:
        """The object-store twin of :meth:`_open_local`: the same marker, written with one put."""
        try:
            raw = objects.read(location, _MARKER)
            if raw is not None:
                found = cls._check_format(_read_marker(lambda: raw, location / _MARKER), location / _MARKER)
                if found < STATE_FORMAT_VERSION:
                    migrate_tables(location, found)
                    objects.put(location, _MARKER, _marker_bytes())
                return cls(location)
            if any(name != MARKER_DIR for name in objects.list_names(location, limit=2)):
                raise StateRootError(f"{location} is not a groupcoord state root (no {_MARKER})")
            if not create:
                raise StateRootError(f"state root {location} does not exist")
            objects.put(location, _MARKER, _marker_bytes())
        except StateRootError:
            raise
        except Exception as exc:  # obstore raises its own errors for unreachable servers, refused credentials
            raise StateRootError(f"cannot open state root {location}: {str(exc).splitlines()[0]}") from None
        return cls(location)

    @staticmethod
    def _check_format(found: object, marker: object) -> int:
        if not isinstance(found, int) or found > STATE_FORMAT_VERSION:
            raise StateRootError(
                f"state root {marker} has format {found}, newer than this groupcoord supports "
                f"({STATE_FORMAT_VERSION}); upgrade groupcoord"
            )
        return found

    @property
    def is_local(self) -> bool:
        """True for a root in a local directory, False for one on object storage."""
        return self.location.is_local

    @property
    def path(self) -> Path:
        """The root's local directory; a :class:`StateRootError` for a root on object storage (what needs a local
        root asks for this, everything else for :attr:`location` and the table locations)."""
        if not self.location.is_local:
            raise StateRootError(f"state root {self.location} is on object storage; this operation needs a local "
                                 "state root")
        return self.location.local_path

    @property
    def format_version(self) -> int:
        """The format recorded in the root's marker (the current one, once :meth:`open` returned)."""
        if self.is_local:
            raw = (self.path / MARKER_DIR / MARKER_FILE).read_bytes()
        else:
            raw = objects.read(self.location, _MARKER) or b"{}"
        return int(json.loads(raw)["format"])

    @property
    def log_path(self) -> TableLocation:
        """The coordinator's record log table."""
        return self.location / "log"

    @property
    def lease_path(self) -> TableLocation:
        """The election lease table."""
        return self.location / "lease"

    @property
    def catalog_path(self) -> TableLocation:
        """The topic catalog table."""
        return self.location / "catalog"

    def topic_path(self, topic: str) -> TableLocation:
        """The embedded topic log table of ``topic`` (the name must already be validated)."""
        return self.location / "topics" / topic

    def state_table_path(self, table: str) -> TableLocation:
        """A materialized state table (``offsets``, ``groups``, ``members``, ``assignments``)."""
        return self.location / "state" / table

    @property
    def partition_weights_path(self) -> TableLocation:
        """The optional partition weights table read by the weighted assignor."""
        return self.location / "partition_weights"


def _read_marker(read: Any, where: object) -> object:
    """The ``format`` of a marker whose bytes ``read()`` returns."""
    try:
        return json.loads(read())["format"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise StateRootError(f"unreadable state format marker {where}: {exc}") from None


def _marker_bytes() -> bytes:
    return (json.dumps({"format": STATE_FORMAT_VERSION}) + "\n").encode()


def _write_marker(marker: Path) -> None:
    """Write the current format into ``marker`` atomically (a per-process temporary file, then a rename)."""
    tmp = marker.with_name(f"{MARKER_FILE}.{os.getpid()}.tmp")
    tmp.write_bytes(_marker_bytes())
    tmp.replace(marker)
