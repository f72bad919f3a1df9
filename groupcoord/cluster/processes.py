"""Small process helpers for the cluster launcher and the supervisor: the process tree from ``/proc`` (Linux), a
child that dies with its parent, and whole process groups killed."""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable
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
