"""The ingestion run's stop marker: SIGTERM or SIGINT on the driver creates it, and every member sees it.

A marker is an empty file (a local state root) or object (a state root on S3) under the state root,
``_groupcoord/ingest/stop-<run id>``: the members engine's executor tasks check it from wherever they run, so it
lives on the storage they share with the driver. A :class:`StopMarker` is picklable and secret-free (the URI and the
``storage.*`` settings); each process opens it with its own credentials.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import tempfile
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from groupcoord.state_root import MARKER_DIR, StateRoot
from groupcoord.storage import objects
from groupcoord.storage.location import TableLocation, parse_location

log = logging.getLogger("groupcoord.ingest")


@dataclass(frozen=True)
class StopMarker:
    """Where one run's stop request is written: ``uri`` (a local path or ``s3://``) with the root's settings."""

    uri: str
    storage: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def new(cls, root: StateRoot) -> StopMarker:
        """A marker of a new run under ``root``."""
        uri, storage = (root.location / MARKER_DIR / "ingest" / f"stop-{uuid.uuid4().hex}").spec()
        return cls(uri, storage)

    @classmethod
    def local(cls) -> StopMarker:
        """A marker in the driver's temporary directory, for a run whose members all run in the driver (the
        structured engine's queries): checking it costs no request to the state root's storage."""
        return cls(str(Path(tempfile.gettempdir()) / f"groupcoord-ingest-{os.getuid()}" / f"stop-{uuid.uuid4().hex}"))

    def _where(self) -> tuple[TableLocation, str]:
        location = parse_location(self.uri, settings=self.storage)
        parent, _, name = location.uri.rpartition("/")
        return TableLocation(parent, location.options, location.settings), name

    def request(self) -> None:
        """Ask every member to stop (idempotent)."""
        folder, name = self._where()
        if folder.is_local:
            folder.local_path.mkdir(parents=True, exist_ok=True)
            (folder.local_path / name).touch()
        else:
            objects.put(folder, name, b"")

    def requested(self) -> bool:
        """True once :meth:`request` ran, in any process."""
        folder, name = self._where()
        return os.path.exists(folder.local_path / name) if folder.is_local else objects.exists(folder, name)

    def remove(self) -> None:
        """Delete the marker once the run is over (best effort)."""
        folder, name = self._where()
        if folder.is_local:
            Path(folder.local_path / name).unlink(missing_ok=True)
            return
        with contextlib.suppress(Exception):
            objects.delete(folder, name)


@contextlib.contextmanager
def stop_on_signal(marker: StopMarker) -> Iterator[None]:
    """While inside, SIGTERM and SIGINT write ``marker`` (the members' signal to commit and leave)."""
    def request_stop(signum: int, frame: FrameType | None) -> None:
        log.warning("received %s: the members stop, commit and leave", signal.Signals(signum).name)
        marker.request()

    previous = {s: signal.signal(s, request_stop) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
