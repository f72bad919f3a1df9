"""Named crash points for fault tests: ``GROUPCOORD_CRASH_AT=<point>[:<n>]`` SIGKILLs the process at the n-th
time (default the first) that the point is reached.

Points:

- ``before-commit``: a batch is assembled and about to be committed to the record log;
- ``after-commit``: a batch is durable but nobody has been answered yet;
- ``batch-assembly``: a write arrives while another write is queued (a batch is being assembled);
- ``rebalance``: a SyncGroup arrives, i.e. a join round completed and the generation is not yet persisted;
- ``sink-write``: a ``groupcoord-delta`` task wrote its files and has not returned them (an executor's worker);
- ``sink-after-delta-commit``: a ``groupcoord-delta`` batch is in the Delta table, its offsets not yet in the group.

Two more variables shape the kill. ``GROUPCOORD_CRASH_ONCE=<file>`` fires the point once across all processes (the
first to create the file), so a retried Spark task survives. ``GROUPCOORD_CRASH_PROCESS_GROUP=<pgid>`` kills that
whole process group instead of the process (a Spark driver with its JVM, from one of its Python workers).
"""

from __future__ import annotations

import logging
import os
import signal

ENV = "GROUPCOORD_CRASH_AT"
ONCE_ENV = "GROUPCOORD_CRASH_ONCE"
PROCESS_GROUP_ENV = "GROUPCOORD_CRASH_PROCESS_GROUP"
POINTS = ("before-commit", "after-commit", "batch-assembly", "rebalance", "sink-write", "sink-after-delta-commit")

log = logging.getLogger("groupcoord.runtime.crash_points")
_hits: dict[str, int] = {}


def armed_point() -> tuple[str, int] | None:
    """The point named in the environment and the hit count that fires it, or ``None``."""
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return None
    name, _, count = raw.partition(":")
    if name not in POINTS:
        raise ValueError(f"{ENV}={raw!r}: unknown crash point; known: {', '.join(POINTS)}")
    return name, int(count or 1)


def crash_point(name: str) -> None:
    """SIGKILL this process if ``name`` is the armed point and this is its n-th hit."""
    armed = armed_point()
    if armed is None or armed[0] != name:
        return
    _hits[name] = _hits.get(name, 0) + 1
    if _hits[name] >= armed[1] and _first_across_processes():
        log.warning("crash point %s reached: SIGKILL", name)
        for handler in logging.getLogger("groupcoord").handlers:
            handler.flush()
        group = os.environ.get(PROCESS_GROUP_ENV, "").strip()
        if group:
            os.killpg(int(group), signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)


def _first_across_processes() -> bool:
    """True unless ``GROUPCOORD_CRASH_ONCE`` names a file that another process (or this one) created first."""
    marker = os.environ.get(ONCE_ENV, "").strip()
    if not marker:
        return True
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True
