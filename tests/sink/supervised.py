"""A streaming query that the tests restart from its checkpoint when Spark failed it for want of CPU, as a job's
supervisor (a cluster manager's retry) would.

Spark waits 10 s, hard-coded in ``PythonWorkerFactory.createSimpleWorker`` (pyspark 4.2, no setting), for a Python
worker it started on the driver to connect back. The driver starts one for a Python source when the query starts and
one for a Python sink's commit of every batch; each imports pyspark (0.8 s of CPU) before it connects. With both cores
busy with a CPU hog besides two test workers (issue 26's condition) that took longer than 10 s, and the query failed
with :data:`WORKER_TIMEOUT` before or between batches. Restarting it from its checkpoint is what the sink's
exactly-once promise is for; any other failure is the test's to see.
"""

from __future__ import annotations

import logging
import math
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.errors import StreamingQueryException
from pyspark.sql.streaming.query import StreamingQuery

log = logging.getLogger("tests.sink.supervised")

WORKER_TIMEOUT = "Python worker failed to connect back"
"""Spark's message when a Python worker it started did not connect back in time."""

MAX_RESTARTS = 3


class SupervisedQuery:
    """The query that ``start()`` starts, started again (same checkpoint) when Spark failed it with
    :data:`WORKER_TIMEOUT`, at most :data:`MAX_RESTARTS` times. Attributes not defined here are the current
    query's; ``recentProgress`` spans every start. A query whose sink cannot recover from a checkpoint (Spark's
    ``memory`` sink) names it in ``discard_checkpoint``: it starts over without it (it failed before writing anything,
    or the test sees the rows it lost)."""

    def __init__(self, start: Callable[[], StreamingQuery], *, discard_checkpoint: Path | None = None) -> None:
        self._start = start
        self._discard = discard_checkpoint
        self.query = start()
        self.restarts = 0
        self._earlier_progress: list[dict[str, Any]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.query, name)

    @property
    def recentProgress(self) -> list[dict[str, Any]]:
        """The progress of every start, oldest first."""
        return self._earlier_progress + list(self.query.recentProgress)

    def restart_if_starved(self) -> bool:
        """Start the query again if Spark failed it with :data:`WORKER_TIMEOUT`; True if it did."""
        if self.query.isActive or self.restarts >= MAX_RESTARTS:
            return False
        error = self.query.exception()
        if error is None or WORKER_TIMEOUT not in str(error):
            return False
        self.restarts += 1
        log.warning("query %s failed with %r: restart %d from its checkpoint", self.query.name, WORKER_TIMEOUT,
                    self.restarts)
        self._earlier_progress += list(self.query.recentProgress)
        if self._discard is not None:
            shutil.rmtree(self._discard, ignore_errors=True)
        self.query = self._start()
        return True

    def awaitTermination(self, timeout: float | None = None) -> bool | None:
        """As the query's, across restarts; ``timeout`` (seconds) bounds the whole wait."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            remaining = None if deadline is None else max(0, math.ceil(deadline - time.monotonic()))
            try:
                return self.query.awaitTermination(remaining)
            except StreamingQueryException:
                if not self.restart_if_starved():
                    raise

    def check_alive(self) -> None:
        """Fail at once, with the query's error, when the query stopped (after restarting a starved one)."""
        if not self.query.isActive and not self.restart_if_starved():
            raise AssertionError(f"query {self.query.name} stopped: {self.query.exception()}")
