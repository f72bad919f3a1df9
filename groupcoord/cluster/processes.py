"""Small process helpers for the cluster launcher and the supervisor: the process tree from ``/proc`` (Linux), a
child that dies with its parent, and whole process groups killed."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

PROC = Path("/proc")


def die_with_parent() -> Callable[[], None] | None:
    """On Linux, a ``preexec_fn`` asking the kernel to SIGKILL the child when the thread that started it dies
    (kept across ``exec``, so it holds for the JVM that ``spark-class`` execs); ``None`` elsewhere."""
    if not sys.platform.startswith("linux"):
        return None

    def set_parent_death_signal() -> None:
        pr_set_pdeathsig = 1
        ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGKILL)

    return set_parent_death_signal


def command_line(pid: int) -> list[str]:
    """The arguments of process ``pid`` (empty when it is gone)."""
    try:
        raw = (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def children_by_parent() -> dict[int, list[int]]:
    """Every running process's children, by parent pid."""
    children: dict[int, list[int]] = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry.name))
    return children


def descendants(pid: int) -> list[int]:
    """Every process below ``pid``, parents before their children."""
    children = children_by_parent()
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in sorted(children.get(todo.pop(0), [])):
            found.append(child)
            todo.append(child)
    return found


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie counts as gone)."""
    try:
        state = (PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def kill_group(pgid: int, signum: int = signal.SIGKILL) -> bool:
    """Send ``signum`` to every process of group ``pgid``; False when the group is gone."""
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        return False
    return True


def listening_pids(port: int, candidates: Iterable[int]) -> list[int]:
    """The processes among ``candidates`` that hold a TCP socket listening on ``port`` (from ``/proc/net/tcp*``
    and each candidate's open files)."""
    sockets = {f"socket:[{inode}]" for inode in _listening_inodes(port)}
    found = []
    for pid in candidates:
        if sockets & _open_files(pid):
            found.append(pid)
    return found


def _open_files(pid: int) -> set[str]:
    """What ``pid``'s file descriptors point at (``socket:[INODE]`` for a socket); empty when it is gone."""
    links = set()
    try:
        descriptors = list((PROC / str(pid) / "fd").iterdir())
    except OSError:
        return set()
    for descriptor in descriptors:
        with contextlib.suppress(OSError):  # closed meanwhile
            links.add(os.readlink(descriptor))
    return links


def _listening_inodes(port: int) -> set[str]:
    listen = "0A"  # TCP_LISTEN in /proc/net/tcp's "st" column
    inodes = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = (PROC / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[3] == listen and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    return inodes
