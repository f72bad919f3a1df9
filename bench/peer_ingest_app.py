"""The spark-submit application of :mod:`bench.peer_ingest`: one side's ingestion, ``--runs`` times in one process.

``bin/spark-submit --master M bench/peer_ingest_app.py spark|groupcoord --bootstrap HOST:PORT --topic T --work DIR
--members N --runs R`` ingests the whole topic ``R`` times, each into a new Delta table under ``DIR`` (``run-<i>``),
and prints one line ``{"peer_ingest_run": i, "seconds": S, "sink": PATH}`` per run. The first run is the process's
cold one, the later ones warm (the JVM, Spark's executors and the Python workers are up).

- ``spark``: Spark's Kafka source, ``spark.readStream.format("kafka")`` with ``Trigger.AvailableNow``, into a Delta
  table through delta-spark (``writeStream.format("delta")``).
- ``groupcoord``: ``jobs/streaming_ingest.py``'s own entry point (``groupcoord.ingest.entry.main``) with
  ``--engine members --source kafka://... --available-now``, ``--members N`` executor members, into its Delta sink.

Self-contained (it runs as a script, with ``bench/`` and not the checkout on ``sys.path``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from pyspark.sql import SparkSession

RESULT_KEY = "peer_ingest_run"
SINK_COLUMNS = ("topic", "partition", "offset", "timestamp", "key", "value")


def spark_kafka_source(spark: SparkSession, bootstrap: str, topic: str, run_dir: Path) -> Path:
    """Read the whole topic with Spark's Kafka source (AvailableNow) into a delta-spark table; returns its path."""
    table = run_dir / "table"
    query = (spark.readStream.format("kafka")
             .option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", topic)
             .option("startingOffsets", "earliest")
             .load()
             .select(*SINK_COLUMNS)
             .writeStream.format("delta")
             .option("checkpointLocation", str(run_dir / "checkpoint"))
             .trigger(availableNow=True)
             .start(str(table)))
    query.awaitTermination()
    if query.exception() is not None:
        raise RuntimeError(f"Spark's Kafka source query failed: {query.exception()}")
    return table


def groupcoord_job(bootstrap: str, topic: str, run_dir: Path, members: int, run: int) -> Path:
    """Run ``jobs/streaming_ingest.py``'s entry point once (available-now); returns the sink's path."""
    from groupcoord.ingest.entry import main as ingest_main

    sink = run_dir / "sink"
    code = ingest_main(["--engine", "members", "--group", f"peer-ingest-{run}", "--topics", topic,
                        "--source", f"kafka://{bootstrap}",
                        "--sink", str(sink), "--members", str(members), "--state-root", str(run_dir / "state"),
                        "--available-now", "--no-progress-tty"])
    if code != 0:
        raise RuntimeError(f"streaming_ingest exited with {code}")
    return sink


def main(argv: list[str] | None = None) -> int:
    """Parse, then ingest ``--runs`` times, printing one JSON line per run."""
    parser = argparse.ArgumentParser(prog="peer_ingest_app")
    parser.add_argument("side", choices=("spark", "groupcoord"))
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--work", required=True, type=Path)
    parser.add_argument("--members", type=int, default=1)
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args(argv)
    spark = SparkSession.builder.appName(f"peer-ingest-{args.side}").getOrCreate()
    for run in range(args.runs):
        run_dir = args.work / f"run-{run}"
        started = time.monotonic()
        if args.side == "spark":
            sink = spark_kafka_source(spark, args.bootstrap, args.topic, run_dir)
        else:
            sink = groupcoord_job(args.bootstrap, args.topic, run_dir, args.members, run)
        print(json.dumps({RESULT_KEY: run, "seconds": time.monotonic() - started, "sink": str(sink)}), flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
