"""What every entry point prints besides its output: the one logging setup, and errors as one line.

The logging setup sends the ``groupcoord`` logger to stderr, so progress shows and stdout stays parseable.
Only entry points call :func:`log_to_stderr`: the ``groupcoord`` command (INFO, or DEBUG with ``--debug``) and the
spark-submit jobs. The library itself never configures logging, and never the root logger. Spark's JVM logs go
through log4j instead; ``conf/log4j2.properties`` keeps them at WARN.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def log_to_stderr(*, level: int = logging.INFO, quiet: Iterable[str] = ()) -> None:
    """Send the ``groupcoord`` logger's records at ``level`` and above to stderr (one handler, however often this is
    called); the loggers named in ``quiet`` keep WARNING and above."""
    logger = logging.getLogger("groupcoord")
    if not any(getattr(h, "_groupcoord_stderr", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(FORMAT))
        handler._groupcoord_stderr = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
    for name in quiet:
        logging.getLogger(name).setLevel(logging.WARNING)


def one_line(exc: BaseException) -> str:
    """The exception as a single line of text (never a traceback)."""
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
