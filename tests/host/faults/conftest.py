"""Fixtures of the fault tests: a small tmpfs for the state root, and a static member speaking raw wire requests."""

from __future__ import annotations

import errno
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kafka.protocol.consumer import HeartbeatRequest, JoinGroupRequest, SyncGroupRequest

from tests.host.conftest import serve
from tests.server.conftest import RawClient

__all__ = ["SmallDisk", "StaticMember", "serve", "small_disk"]

DISK_SIZE = "4m"


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)


class SmallDisk:
    """A 4 MiB tmpfs mounted at ``path``: fill it, free it, remount it read-only or read-write."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.filler = path / "filler.bin"

    def fill(self) -> int:
        """Write a filler file until the disk is full; returns the bytes written."""
        written = 0
        chunk = b"\0" * 65536
        with self.filler.open("ab", buffering=0) as out:
            while True:
                try:
                    written += out.write(chunk) or 0
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    break
        for size in (4096, 512, 1):  # the last few bytes too, so nothing fits
            try:
                with self.filler.open("ab", buffering=0) as out:
                    while True:
                        written += out.write(b"\0" * size) or 0
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
        return written

    def free(self) -> None:
        """Delete the filler file."""
        self.filler.unlink(missing_ok=True)

    def remount(self, *, read_only: bool) -> None:
        """``mount -o remount,ro`` (or ``rw``); fails the test if refused."""
        result = _run("mount", "-o", f"remount,{'ro' if read_only else 'rw'}", str(self.path))
        assert result.returncode == 0, f"remount {'ro' if read_only else 'rw'} refused: {result.stderr.strip()}"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[SmallDisk]:
    """A fresh tmpfs of 4 MiB; skipped (with the reason) where mounting is refused; always unmounted."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    result = _run("mount", "-t", "tmpfs", "-o", f"size={DISK_SIZE}", "tmpfs", str(mount_point))
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs (needs root and CAP_SYS_ADMIN): {result.stderr.strip()}")
    try:
        yield SmallDisk(mount_point)
    finally:
        if _run("umount", str(mount_point)).returncode != 0:
            _run("umount", "-l", str(mount_point))


@dataclass
class StaticMember:
    """One static member of a client-side ("range") group over a raw connection: join, sync, heartbeat."""

    client: RawClient
    group: str
    instance: str
    member_id: str = ""
    generation: int = -1

    def join(self, session_timeout_ms: int = 30000) -> None:
        """JoinGroup v5 as the only member, then SyncGroup as leader with an empty assignment."""
        joined = self.client.request(JoinGroupRequest(
            version=5, group_id=self.group, session_timeout_ms=session_timeout_ms, rebalance_timeout_ms=10000,
            member_id="", group_instance_id=self.instance, protocol_type="consumer",
            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")]))
        assert joined.error_code == 0, f"JoinGroup failed with error {joined.error_code}"
        self.member_id, self.generation = joined.member_id, joined.generation_id
        synced = self.client.request(SyncGroupRequest(
            version=3, group_id=self.group, generation_id=self.generation, member_id=self.member_id,
            group_instance_id=self.instance, assignments=[
                SyncGroupRequest.SyncGroupRequestAssignment(member_id=self.member_id, assignment=b"")]))
        assert synced.error_code == 0, f"SyncGroup failed with error {synced.error_code}"

    def heartbeat(self) -> int:
        """One Heartbeat v3; returns its error code."""
        response = self.client.request(HeartbeatRequest(
            version=3, group_id=self.group, generation_id=self.generation, member_id=self.member_id,
            group_instance_id=self.instance))
        return int(response.error_code)
