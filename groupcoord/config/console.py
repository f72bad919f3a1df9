"""Logging of the spark-submit jobs: the ``groupcoord`` logger to stderr at INFO, so their progress shows.

Only the jobs' entry points call :func:`log_to_stderr` (the library itself never configures logging, and never the
root logger). Spark's JVM logs go through log4j instead; ``conf/log4j2.properties`` keeps them at WARN.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def log_to_stderr(*, quiet: Iterable[str] = ()) -> None:
    """Send the ``groupcoord`` logger's INFO and above to stderr, once; the loggers named in ``quiet`` keep WARNING+."""
    logger = logging.getLogger("groupcoord")
    if not any(getattr(h, "_groupcoord_job", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(FORMAT))
        handler._groupcoord_job = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    for name in quiet:
        logging.getLogger(name).setLevel(logging.WARNING)
