"""Spark's Python daemon with groupcoord's executor-side libraries imported first (``spark.python.daemon.module``).

Spark starts one daemon per executor (``python -m`` this module) and forks each Python worker from it. Importing
pyarrow, delta-rs and groupcoord's source and sink here, once, makes every forked worker start with them loaded:
without it, each new worker imports them itself (28-31 s for the first micro-batch's tasks after a driver restart on
the loaded test machine, and again whenever Spark had dropped an idle worker, after a minute). An import that fails
is left to the worker, which reports it as it would have.
"""

from __future__ import annotations

import contextlib
import importlib

from groupcoord.ingest.warm_up import WARM_MODULES

for _name in WARM_MODULES:
    with contextlib.suppress(ImportError):
        importlib.import_module(_name)

if __name__ == "__main__":
    from pyspark.daemon import manager

    manager()
