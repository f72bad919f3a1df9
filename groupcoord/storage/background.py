"""Background work of the logs: low-priority threads, and Delta checkpoints written off the commit path.

A checkpoint lets readers start from one Parquet file instead of replaying every JSON commit, so load time stays
bounded. delta-rs writes one in its post-commit hook, *inside* the commit call, and its cost grows with the
table's files; commits written by :mod:`groupcoord.storage.files` skip that hook, and their writer hands the work
to a :class:`BackgroundCheckpointer` instead, so no acknowledgement ever waits for a checkpoint.

Requests coalesce: when commits outrun the thread, it checkpoints the newest version it was told about and skips
the ones in between (a checkpoint covers every earlier version). A checkpoint at a committed version is valid
whoever writes later versions meanwhile, so it needs no coordination with the writer. The thread is an ordinary
(non-daemon) executor thread: interpreter exit waits for a checkpoint in progress rather than killing delta-rs
mid-write. It runs at a lower scheduling priority (:func:`lower_thread_priority`) than the acknowledgement path.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from groupcoord.storage.location import TableLocation
from groupcoord.storage.tables import open_table

log = logging.getLogger("groupcoord.storage.background")

BACKGROUND_NICE = 10
"""Scheduling niceness of the log's background threads (checkpoints, maintenance planning, garbage collection)."""


def lower_thread_priority() -> None:
    """Make the calling thread yield the CPU to the acknowledgement path (event loop, commits): on Linux a thread
    has its own niceness. Background work on a machine short of cores otherwise delays acknowledgements."""
    with contextlib.suppress(AttributeError, OSError):  # not Linux, or not permitted: run at normal priority
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), BACKGROUND_NICE)


def background_executor(name: str) -> ThreadPoolExecutor:
    """A one-thread executor running at :data:`BACKGROUND_NICE`."""
    return ThreadPoolExecutor(1, thread_name_prefix=name, initializer=lower_thread_priority)


class BackgroundCheckpointer:
    """Checkpoints the Delta table at ``path`` every ``interval`` committed versions, in a background thread."""

    def __init__(self, path: Path | TableLocation, *, interval: int) -> None:
        self.path = path
        self.interval = max(1, interval)
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._wanted = -1
        self._requested = -1  # the newest version a checkpoint was requested for
        self._scheduled = False
        self.written: list[int] = []
        """Versions checkpointed by this instance, in order."""

    def committed(self, version: int) -> None:
        """Note that ``version`` was committed; schedules a checkpoint once ``interval`` versions accumulated."""
        with self._lock:
            if version < self._requested + self.interval:
                return
            self._requested = version
            self._wanted = max(self._wanted, version)
            if self._scheduled:
                return
            self._scheduled = True
            if self._executor is None:
                self._executor = background_executor("groupcoord-checkpoint")
            self._executor.submit(self._run)

    def restart_from(self, version: int) -> None:
        """Count the next ``interval`` commits from ``version`` (a loaded or externally checkpointed version)."""
        with self._lock:
            self._requested = max(self._requested, version)

    def close(self) -> None:
        """Wait for the checkpoint in progress (if any) and stop the thread."""
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)

    def _run(self) -> None:
        with self._lock:
            version, self._scheduled = self._wanted, False
        try:
            # A fresh open (from the previous checkpoint) is cheaper than updating a kept table in place.
            open_table(self.path, version=version).create_checkpoint()
            self.written.append(version)
            log.debug("checkpointed %s at version %d", self.path, version)
        except Exception as exc:  # a missing checkpoint only slows loads down; the next request retries
            log.warning("checkpoint of %s at version %d failed: %s", self.path, version, exc)
