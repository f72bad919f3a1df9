"""A class-data-sharing archive of the broker's classes: made by the first broker that stops, mapped by the next ones.

Loading and verifying Kafka's classes is most of a broker's start-up. Java's dynamic class-data sharing (JEP 350,
``-XX:ArchiveClassesAtExit`` then ``-XX:SharedArchiveFile``) keeps them in a memory-mapped archive, which cut the
start-up by about a third here (README, "A real Kafka broker for development"). The archive is only valid for one JVM
and one exact set of jars, so its name is a digest of both; the JVM checks the classpath again itself and ignores an
archive that does not match. It lives beside the jars (``<jars>/kafka-cds/``); where that folder cannot be written,
brokers simply start without one.
"""

from __future__ import annotations

import hashlib
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from groupcoord.config.jars import jars_root, kafka_jars

FOLDER_NAME = "kafka-cds"
_STALE_DUMP_S = 3600.0


@dataclass(frozen=True)
class ClassArchive:
    """The archive for one JVM and jar set, and where this process's broker dumps a new one if there is none yet."""

    path: Path
    dump_path: Path

    def broker_options(self) -> list[str]:
        """JVM options for a broker: map the archive, or dump one when the broker exits."""
        if self.path.is_file():
            return [f"-XX:SharedArchiveFile={self.path}"]
        return [f"-XX:ArchiveClassesAtExit={self.dump_path}"]

    def tool_options(self) -> list[str]:
        """JVM options for a short-lived tool (StorageTool): map the archive if there is one, never dump."""
        return [f"-XX:SharedArchiveFile={self.path}"] if self.path.is_file() else []

    def publish(self) -> None:
        """Once the broker's JVM has exited: move a freshly dumped archive into place, and drop outdated ones."""
        if not self.dump_path.is_file():
            return
        try:
            os.replace(self.dump_path, self.path)
        except OSError:
            self.dump_path.unlink(missing_ok=True)
            return
        digest = self.path.stem
        for other in self.path.parent.glob("*.jsa"):
            try:
                outdated = not other.name.startswith(digest)
                abandoned = other.name.endswith(".dump.jsa") and time.time() - other.stat().st_mtime > _STALE_DUMP_S
                if outdated or abandoned:
                    other.unlink()
            except FileNotFoundError:  # another broker's publish got there first
                continue


def class_archive(java: str) -> ClassArchive | None:
    """The archive for ``java`` and Kafka's jars, or None when its folder cannot be written."""
    folder = jars_root() / FOLDER_NAME
    try:
        folder.mkdir(exist_ok=True)
    except OSError:
        return None
    if not os.access(folder, os.W_OK):
        return None
    identity = hashlib.sha256(os.path.realpath(java).encode())
    for jar in kafka_jars():
        stat = jar.stat()
        identity.update(f"{jar}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    digest = identity.hexdigest()[:16]
    return ClassArchive(folder / f"{digest}.jsa", folder / f"{digest}.{uuid.uuid4().hex[:12]}.dump.jsa")
