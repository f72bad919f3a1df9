"""Ingestion against Spark's Kafka source: the same topic on a real broker into Delta, with the same Spark master.

One dev broker (Apache Kafka 4.4.0) holds ``records`` records of 1 KB in 12 partitions (1,000,000 with ``--full``,
100,000 quick). For each master, each side ingests the whole topic into a new Delta table, one side after the other:

- ``spark_kafka_source``: ``spark.readStream.format("kafka")`` with ``Trigger.AvailableNow`` into a delta-spark table
  (:mod:`bench.peer_ingest_app`);
- ``groupcoord``: ``jobs/streaming_ingest.py --engine members --source kafka://... --available-now --members N`` into
  its Delta sink.

Masters: ``local[4,4]`` with 3 members, and ``local[2]`` with 1 member (``run_members`` needs members + 1 task
slots). Everything is launched as users do, with ``bin/spark-submit``. Per side and master, two processes:

- cold: one ingestion in a fresh process, timed from the ``spark-submit`` command to its exit (JVM, Spark and the
  Python workers start inside the figure). groupcoord's is ``jobs/streaming_ingest.py`` itself; Spark's is the app
  with ``--runs 1``.
- warm: the app with ``--runs 2``; the second ingestion's time, measured inside the process.

Each sink is counted afterwards (delta-rs) and must hold every record. Command: ``python -m bench.run peer_ingest``
(or ``--full``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from deltalake import DeltaTable

from bench.peer_ingest_app import RESULT_KEY
from bench.peer_targets import RATIO_MEANING, load_average, side_by_side
from bench.results_io import write_result
from groupcoord.devbroker import PEER_JVM_OPTIONS, KafkaBroker, Record

REPO = Path(__file__).resolve().parent.parent
SPARK_SUBMIT = REPO / "bin" / "spark-submit"
APP = REPO / "bench" / "peer_ingest_app.py"
JOB = REPO / "jobs" / "streaming_ingest.py"
TOPIC = "ingest"
PARTITIONS = 12
RECORD_BYTES = 1024
MASTERS: tuple[tuple[str, int], ...] = (("local[4,4]", 3), ("local[2]", 1))
SIDES = ("spark_kafka_source", "groupcoord")
QUICK_RECORDS = 100_000
FULL_RECORDS = 1_000_000
PROCESS_TIMEOUT_S = 3600


def records(count: int) -> Iterator[Record]:
    """``count`` distinct 1 KB values (an 8-byte index, then random bytes), round-robin over the partitions."""
    filler = [os.urandom(RECORD_BYTES - 8) for _ in range(256)]
    for i in range(count):
        yield Record(i.to_bytes(8, "big") + filler[i % len(filler)], partition=i % PARTITIONS)


def _submit(master: str, arguments: list[str], log: Path) -> tuple[float, list[dict[str, Any]]]:
    """Run ``bin/spark-submit --master master ARGS`` (its stderr, then its stdout, into ``log``); its wall seconds
    and the app's result lines."""
    started = time.monotonic()
    with log.open("w") as stderr:
        finished = subprocess.run([str(SPARK_SUBMIT), "--master", master, *arguments], cwd=REPO, stdout=subprocess.PIPE,
                                  stderr=stderr, text=True, timeout=PROCESS_TIMEOUT_S, check=False)
    seconds = time.monotonic() - started
    with log.open("a") as kept:  # the job logs its progress on stdout: keep it beside stderr
        kept.write(finished.stdout)
    if finished.returncode != 0:
        tail = "\n".join(log.read_text().splitlines()[-30:])
        raise RuntimeError(f"spark-submit {' '.join(arguments[:2])} exited with {finished.returncode}:\n{tail}")
    results = [json.loads(line) for line in finished.stdout.splitlines() if RESULT_KEY in line]
    return seconds, results


def _rows(sink: Path | str) -> int:
    return int(DeltaTable(str(sink)).to_pyarrow_dataset().count_rows())


def measure(side: str, master: str, members: int, bootstrap: str, work: Path, count: int) -> dict[str, Any]:
    """One side on one master: the cold one-shot process, then the warm in-process run; checks both sinks."""
    app = [str(APP), "groupcoord" if side == "groupcoord" else "spark", "--bootstrap", bootstrap, "--topic", TOPIC,
           "--members", str(members)]
    work.mkdir(parents=True, exist_ok=True)
    cold_dir = work / "cold"
    if side == "groupcoord":
        cold_sink = cold_dir / "sink"
        cold_s, _ = _submit(master, [str(JOB), "--engine", "members", "--group", "peer-ingest-cold", "--topics", TOPIC,
                                     "--source", f"kafka://{bootstrap}", "--sink", str(cold_sink),
                                     "--members", str(members),
                                     "--state-root", str(cold_dir / "state"), "--available-now",
                                     "--no-progress-tty"], work / "cold.log")
    else:
        cold_s, cold_results = _submit(master, [*app, "--work", str(cold_dir), "--runs", "1"], work / "cold.log")
        cold_sink = Path(cold_results[0]["sink"])
    _, warm_results = _submit(master, [*app, "--work", str(work / "warm"), "--runs", "2"], work / "warm.log")
    first, warm = warm_results
    counted = {_rows(cold_sink), _rows(first["sink"]), _rows(warm["sink"])}
    if counted != {count}:
        raise RuntimeError(f"{side} on {master}: sinks hold {sorted(counted)} rows, not {count}")
    megabytes = count * RECORD_BYTES / 1e6
    return {"side": side, "master": master, "members": members if side == "groupcoord" else None,
            "cold_s": round(cold_s, 1), "cold_records_per_s": round(count / cold_s),
            "first_in_process_s": round(first["seconds"], 1), "warm_s": round(warm["seconds"], 1),
            "warm_records_per_s": round(count / warm["seconds"]),
            "warm_mb_per_s": round(megabytes / warm["seconds"], 1),
            "load_avg_1m": load_average()}


def main(full: bool) -> None:
    """Produce the topic once, then each master, each side in turn; writes ``bench/results/peer_ingest.json``."""
    count = FULL_RECORDS if full else QUICK_RECORDS
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="peer-ingest-") as tmp:
        work = Path(tmp)
        with KafkaBroker.start(work / "kafka", jvm_options=PEER_JVM_OPTIONS) as broker:
            broker.create_topic(TOPIC, partitions=PARTITIONS)
            started = time.monotonic()
            broker.produce(TOPIC, records(count))
            print(f"produced {count} records in {time.monotonic() - started:.1f} s", flush=True)
            for master, members in MASTERS:
                for side in SIDES:
                    case_dir = work / side / re.sub(r"\W+", "_", master)  # delta-rs takes "[" for a URL
                    rows.append(measure(side, master, members, broker.bootstrap, case_dir, count))
                    print(rows[-1], flush=True)
    table = side_by_side(rows, ("master",), ("cold_s", "cold_records_per_s", "warm_s", "warm_records_per_s",
                                             "warm_mb_per_s"), extras=("members", "first_in_process_s",
                                                                      "load_avg_1m"), sides=SIDES)
    write_result(
        "peer_ingest",
        title="Ingestion of a Kafka topic into Delta: jobs/streaming_ingest.py vs Spark's Kafka source",
        rows=table,
        summary={"ratio": RATIO_MEANING, "records": count, "record_bytes": RECORD_BYTES, "partitions": PARTITIONS},
        notes=("One dev broker (Kafka 4.4.0) holds the topic; each side reads all of it into a new Delta table, "
               "the sides one after the other with the same master. spark_kafka_source: Spark 4.2.0's Kafka source "
               "(spark-sql-kafka, one task per partition) with Trigger.AvailableNow, written by delta-spark. "
               "groupcoord: jobs/streaming_ingest.py --source kafka:// --available-now with `members` executor "
               "members of a consumer group, written to its Delta sink with exactly-once transactions. cold_s: a "
               "one-shot bin/spark-submit process, command to exit (includes JVM and Spark start-up); warm_s: the "
               "second ingestion inside one process (first_in_process_s: the first). MB = 10^6 bytes of values."),
    )
