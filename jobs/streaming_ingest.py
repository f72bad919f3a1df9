"""spark-submit entry point of the streaming ingestion job (see ``groupcoord.ingest.entry`` for the flags)::

    spark-submit jobs/streaming_ingest.py [--engine structured|members] --group G (--topics T1,T2 | --pattern REGEX) \\
        --source embedded|kafka://HOST:PORT --sink PATH --members N [--available-now] [--conf-file FILE]
"""

from __future__ import annotations

import logging
import os
import sys

from groupcoord.ingest.entry import main


def _exit_without_finalizing(code: int) -> None:
    """Stop Spark, flush, and end the process without Python's interpreter finalization.

    A run that finished cleanly could still die in finalization (exit 134, "PyGILState_Release: thread state ...
    must be current when releasing"): native threads that outlive ``main`` call into a Python that is shutting down.
    Everything the job owns (its coordinator, its members, its queries) is already closed when ``main`` returns.
    """
    from pyspark.sql import SparkSession

    session = SparkSession.getActiveSession()
    if session is not None:
        session.stop()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    _exit_without_finalizing(main())
