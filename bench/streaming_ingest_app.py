"""The spark-submit application of :mod:`bench.streaming_ingest`: one side's Structured Streaming query, one mode.

``bin/spark-submit --master M bench/streaming_ingest_app.py MODE SIDE --topic T --work DIR [...]`` where SIDE is

- ``spark``: Spark's Kafka source into delta-spark (``readStream.format("kafka")``, ``writeStream.format("delta")``);
- ``groupcoord``: ``readStream.format("groupcoord")`` into ``writeStream.format("groupcoord-delta")``, from the broker
  (``--bootstrap``) or, without it, from the embedded topic log of ``--state-root``;

and MODE is

- ``throughput``: read the whole topic with AvailableNow ``--runs`` times, each into a new table; one JSON line per
  run (``seconds``, ``sink``);
- ``latency``: one query with the default trigger (a batch as soon as the previous one ends); prints ``ready`` once
  it wrote ``--warm-up`` rows, then waits until the table holds ``--expect`` more;
- ``handover`` (groupcoord only): two queries of one group; ``ready`` once both ran a batch and each owns partitions,
  ``--stop-after`` seconds later stops the first (printing the wall time), then waits until the table holds
  ``--expect`` rows.

It runs as a script: it puts the checkout on ``sys.path`` to share :mod:`bench.peer_ingest_app`'s Kafka side.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from deltalake import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.peer_ingest_app import SINK_COLUMNS, spark_kafka_source  # after the path insert above

RESULT_KEY = "streaming_ingest"
_POLL_S = 0.1


def emit(**fields: Any) -> None:
    """One JSON result line on stdout."""
    print(json.dumps({RESULT_KEY: True, **fields}), flush=True)


def groupcoord_query(spark: SparkSession, args: argparse.Namespace, table: Path, checkpoint: Path, group: str, *,
                     available_now: bool) -> StreamingQuery:
    """``readStream.format("groupcoord")`` of the topic into ``groupcoord-delta`` at ``table``."""
    reader = (spark.readStream.format("groupcoord").option("group.id", group).option("subscribe", args.topic)
              .option("startingOffsets", "earliest").option("state.root", args.state_root))
    if args.bootstrap:
        reader = reader.option("kafka.bootstrap.servers", args.bootstrap)
    writer = (reader.load().select(*SINK_COLUMNS).writeStream.format("groupcoord-delta")
              .option("path", str(table)).option("group.id", group).option("checkpointLocation", str(checkpoint)))
    return (writer.trigger(availableNow=True) if available_now else writer).start()


def spark_query(spark: SparkSession, args: argparse.Namespace, table: Path, checkpoint: Path) -> StreamingQuery:
    """Spark's Kafka source with the default trigger into delta-spark at ``table``."""
    return (spark.readStream.format("kafka").option("kafka.bootstrap.servers", args.bootstrap)
            .option("subscribe", args.topic).option("startingOffsets", "earliest").load().select(*SINK_COLUMNS)
            .writeStream.format("delta").option("checkpointLocation", str(checkpoint)).start(str(table)))


def rows_in(table: Path) -> int:
    """Rows in a Delta table, from its log's statistics (0 before its first commit)."""
    if not DeltaTable.is_deltatable(str(table)):
        return 0
    return int(DeltaTable(str(table)).to_pyarrow_dataset().count_rows())


def wait_rows(table: Path, expect: int, queries: list[StreamingQuery]) -> None:
    """Until ``table`` holds ``expect`` rows (a failed query raises)."""
    while rows_in(table) < expect:
        for query in queries:
            if not query.isActive and query.exception() is not None:
                raise RuntimeError(f"query {query.name} failed: {query.exception()}")
        time.sleep(_POLL_S)


def split(state_root: str, group: str, members: int) -> bool:
    """True once ``group`` has ``members`` members and each owns partitions (rows are no sign: the first query may
    have read every record there was before the second joined)."""
    from groupcoord.admin.describe import group_members
    from groupcoord.state_root import StateRoot

    found = group_members(StateRoot.open(state_root), group)
    return len(found) == members and all(m.partitions for m in found)


def throughput(spark: SparkSession, args: argparse.Namespace) -> None:
    """Read the whole topic ``--runs`` times (AvailableNow), one new table each."""
    for run in range(args.runs):
        run_dir = args.work / f"run-{run}"
        started = time.monotonic()
        if args.side == "spark":
            table = spark_kafka_source(spark, args.bootstrap, args.topic, run_dir)
        else:
            table = run_dir / "table"
            query = groupcoord_query(spark, args, table, run_dir / "checkpoint", f"bench-{uuid.uuid4().hex[:8]}",
                                     available_now=True)
            query.awaitTermination()
            if query.exception() is not None:
                raise RuntimeError(f"groupcoord query failed: {query.exception()}")
        emit(run=run, seconds=time.monotonic() - started, sink=str(table))


def latency(spark: SparkSession, args: argparse.Namespace) -> None:
    """One query running batches back to back while the driver produces a steady stream."""
    table, checkpoint = args.work / "table", args.work / "checkpoint"
    query = spark_query(spark, args, table, checkpoint) if args.side == "spark" else \
        groupcoord_query(spark, args, table, checkpoint, "bench-latency", available_now=False)
    while not query.recentProgress:
        time.sleep(_POLL_S)
    wait_rows(table, args.warm_up, [query])  # the first write (JVM classes, Delta's first commit) is behind us
    emit(ready=True, at=time.time())
    wait_rows(table, args.warm_up + args.expect, [query])
    query.stop()
    emit(done=True, sink=str(table))


def handover(spark: SparkSession, args: argparse.Namespace) -> None:
    """Two queries of one group; the first stops part way and its partitions move to the second."""
    table = args.work / "table"
    queries = [groupcoord_query(spark, args, table, args.work / f"checkpoint-{i}", "bench-handover",
                                available_now=False) for i in range(2)]
    while not (all(q.recentProgress for q in queries) and split(args.state_root, "bench-handover", 2)):
        wait_rows(table, 0, queries)
        time.sleep(_POLL_S)
    emit(ready=True)
    time.sleep(args.stop_after)
    stopped_at = time.time()
    queries[0].stop()
    emit(stopped_at=stopped_at)
    wait_rows(table, args.expect, queries[1:])
    queries[1].stop()
    emit(done=True, sink=str(table))


def main(argv: list[str] | None = None) -> int:
    """Parse and run one mode."""
    parser = argparse.ArgumentParser(prog="streaming_ingest_app")
    parser.add_argument("mode", choices=("throughput", "latency", "handover"))
    parser.add_argument("side", choices=("spark", "groupcoord"))
    parser.add_argument("--topic", required=True)
    parser.add_argument("--work", required=True, type=Path)
    parser.add_argument("--bootstrap", help="the broker; groupcoord without it reads the embedded topic log")
    parser.add_argument("--state-root", help="groupcoord: the state root")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--expect", type=int, default=0, help="latency, handover: rows to wait for")
    parser.add_argument("--warm-up", type=int, default=0, help="latency: rows written before it says ready")
    parser.add_argument("--stop-after", type=float, default=5.0, help="handover: seconds before the first stops")
    args = parser.parse_args(argv)
    spark = SparkSession.builder.appName(f"streaming-ingest-{args.mode}-{args.side}").getOrCreate()
    if args.side == "groupcoord":
        from groupcoord.spark import register

        register(spark, state_root=args.state_root)
    {"throughput": throughput, "latency": latency, "handover": handover}[args.mode](spark, args)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
