"""Named crash points for fault tests: ``GROUPCOORD_CRASH_AT=<point>[:<n>]`` SIGKILLs the process at the n-th
time (default the first) that the point is reached.

Points:

- ``before-commit``: a batch is assembled and about to be committed to the record log;
- ``after-commit``: a batch is durable but nobody has been answered yet;
- ``batch-assembly``: a write arrives while another write is queued (a batch is being assembled);
- ``rebalance``: a SyncGroup arrives, i.e. a join round completed and the generation is not yet persisted.
"""

from __future__ import annotations

import logging
import os
import signal

ENV = "GROUPCOORD_CRASH_AT"
POINTS = ("before-commit", "after-commit", "batch-assembly", "rebalance")

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
    if _hits[name] >= armed[1]:
        log.warning("crash point %s reached: SIGKILL", name)
        for handler in logging.getLogger("groupcoord").handlers:
            handler.flush()
        os.kill(os.getpid(), signal.SIGKILL)
