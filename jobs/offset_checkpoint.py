"""spark-submit entry point of the offset checkpoint job (the logic is in :mod:`groupcoord.admin.checkpoint`).

    spark-submit jobs/offset_checkpoint.py --state-root DIR [--run-id ID] [--window N] [--prometheus FILE]
        [--plot FILE]

Run it on a schedule (cron, Airflow): each run snapshots every group's committed offsets and lag into the
``offset_checkpoints`` Delta table, refreshes ``partition_weights`` for the weighted assignor, prints each group's
Burrow status, and optionally writes a Prometheus textfile and a PNG of lag over the runs.
"""

from __future__ import annotations

import sys

from groupcoord.admin.checkpoint_job import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
