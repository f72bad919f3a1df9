"""spark-submit entry point of the streaming ingestion job (see ``groupcoord.ingest.entry`` for the flags)::

    spark-submit jobs/streaming_ingest.py --group G (--topics T1,T2 | --pattern REGEX) \\
        --source embedded|kafka://HOST:PORT --sink PATH --members N [--available-now] [--conf-file FILE]
"""

from __future__ import annotations

import sys

from groupcoord.ingest.entry import main

if __name__ == "__main__":
    sys.exit(main())
