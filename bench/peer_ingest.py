"""Structured Streaming ingestion against Spark's Kafka source: the same records into Delta, the same Spark masters,
the sides alternated.

One dev broker (Apache Kafka 4.4.0) holds ``records`` records of 1 KB in 12 partitions (1,000,000 with ``--full``,
100,000 quick), and the state root's embedded topic log holds the same records. Three sides, each a
``bin/spark-submit bench/streaming_ingest_app.py throughput`` process (:mod:`bench.streaming_ingest_app`) that reads
the whole topic twice with ``Trigger.AvailableNow``, each time into a new Delta table:

- ``spark_kafka_source``: ``readStream.format("kafka")`` into delta-spark (``writeStream.format("delta")``);
- ``groupcoord_kafka``: ``readStream.format("groupcoord")`` from the broker into ``groupcoord-delta``;
- ``groupcoord_embedded``: the same from the embedded topic log.

Masters: ``local[4,4]`` and ``local[2]``. Per sample: ``cold_s``, from the ``spark-submit`` command to the first
ingestion's end (JVM, Spark and the Python workers start inside it), and ``warm_s``, the second ingestion, timed
inside the process. Each master runs :data:`~bench.peer_targets.REPETITIONS` rounds of every side, the order of the
sides reversed every round; the result holds each figure's median and spread. Both tables of every sample are
counted (delta-rs) and must hold every record.

The groupcoord sides run their in-driver coordinator with ``group.initial.rebalance.delay.ms=0``, as Kafka's shipped
``config/server.properties`` sets it for development: Spark's Kafka source has no group, and with the coordinator's
default (3000, Kafka's broker default) each query would wait 3 s for more members before its first batch. Command:
``python -m bench.run peer_ingest`` (or ``--full``).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from deltalake import DeltaTable

from bench.peer_targets import RATIO_MEANING, REPETITIONS, alternated, load_average, medians, side_by_side
from bench.results_io import Check, write_result
from groupcoord.devbroker import PEER_JVM_OPTIONS, KafkaBroker, Record
from groupcoord.state_root import StateRoot
from groupcoord.topics import ProducerRecord, TopicCatalog, TopicLog

REPO = Path(__file__).resolve().parent.parent
SPARK_SUBMIT = REPO / "bin" / "spark-submit"
APP = REPO / "bench" / "streaming_ingest_app.py"
RESULT_KEY = "streaming_ingest"
"""The result lines' key of :mod:`bench.streaming_ingest_app` (not imported: the app puts the checkout on its path)."""
TOPIC = "ingest"
PARTITIONS = 12
RECORD_BYTES = 1024
MASTERS: tuple[str, ...] = ("local[4,4]", "local[2]")
PEER, OURS_KAFKA, OURS_EMBEDDED = "spark_kafka_source", "groupcoord_kafka", "groupcoord_embedded"
SIDES: tuple[str, ...] = (PEER, OURS_KAFKA, OURS_EMBEDDED)
GROUPCOORD_CONF: tuple[str, ...] = ("--conf", "spark.groupcoord.group.initial.rebalance.delay.ms=0")
FIGURES = ("cold_s", "cold_records_per_s", "warm_s", "warm_records_per_s")
GOAL = 1.0
"""Issue 29: groupcoord's records/s at least the peer's, cold and warm, from Kafka and from the embedded log."""
FLOOR = 0.85
"""Issue 29's floor for the same ratios."""
QUICK_RECORDS = 100_000
FULL_RECORDS = 1_000_000
EMBEDDED_CHUNK = 50_000
PROCESS_TIMEOUT_S = 3600


def records(count: int) -> Iterator[Record]:
    """``count`` distinct 1 KB values (an 8-byte index, then random bytes), round-robin over the partitions."""
    filler = [os.urandom(RECORD_BYTES - 8) for _ in range(256)]
    for i in range(count):
        yield Record(i.to_bytes(8, "big") + filler[i % len(filler)], partition=i % PARTITIONS)


def produce_embedded(root: StateRoot, topic: str, count: int) -> None:
    """The same records as the broker's, into the state root's embedded topic log."""
    TopicCatalog(root).create(topic, PARTITIONS)
    log = TopicLog(root, topic)
    chunk: list[ProducerRecord] = []
    for record in records(count):
        chunk.append(ProducerRecord(record.value, partition=record.partition))
        if len(chunk) == EMBEDDED_CHUNK:
            log.produce(chunk)
            chunk = []
    if chunk:
        log.produce(chunk)


def app_arguments(side: str, bootstrap: str, state_root: Path, work: Path, repo: Path = REPO) -> list[str]:
    """The spark-submit arguments after ``--master M`` of one side's throughput app (two runs) in checkout ``repo``."""
    conf = [] if side == PEER else list(GROUPCOORD_CONF)
    where = [] if side == OURS_EMBEDDED else ["--bootstrap", bootstrap]
    return [*conf, str(repo / APP.relative_to(REPO)), "throughput", "spark" if side == PEER else "groupcoord",
            "--topic", TOPIC, "--work", str(work), "--state-root", str(state_root), "--runs", "2", *where]


def measure(side: str, master: str, bootstrap: str, state_root: Path, work: Path, count: int,
            repo: Path = REPO) -> dict[str, Any]:
    """One sample of one side on one master: the cold and the warm ingestion of one process; checks both tables.
    ``repo``: the checkout whose ``bin/spark-submit`` and app run, with its code first on ``PYTHONPATH`` (the driver
    and the Python workers import it)."""
    work.mkdir(parents=True, exist_ok=True)
    log = work / "app.log"
    results: list[tuple[float, dict[str, Any]]] = []
    started = time.monotonic()
    with log.open("w") as stderr:
        command = [str(repo / SPARK_SUBMIT.relative_to(REPO)), "--master", master,
                   *app_arguments(side, bootstrap, state_root, work, repo)]
        app = subprocess.Popen(command, cwd=repo, stdout=subprocess.PIPE, stderr=stderr, text=True,
                               env={**os.environ, "PYTHONPATH": str(repo)})
        assert app.stdout is not None
        for line in app.stdout:
            if RESULT_KEY in line:
                results.append((time.monotonic() - started, json.loads(line)))
        code = app.wait(PROCESS_TIMEOUT_S)
    if code != 0 or len(results) != 2:
        tail = "\n".join(log.read_text().splitlines()[-30:])
        raise RuntimeError(f"{side} on {master} exited with {code} after {len(results)} run(s):\n{tail}")
    (cold_s, first), (_, warm) = results
    counted = {_rows(first["sink"]), _rows(warm["sink"])}
    if counted != {count}:
        raise RuntimeError(f"{side} on {master}: the tables hold {sorted(counted)} rows, not {count}")
    return {"side": side, "master": master, "cold_s": round(cold_s, 1), "cold_records_per_s": round(count / cold_s),
            "first_in_process_s": round(first["seconds"], 1), "warm_s": round(warm["seconds"], 1),
            "warm_records_per_s": round(count / warm["seconds"]), "load_avg_1m": load_average()}


def _rows(table: str) -> int:
    return int(DeltaTable(table).to_pyarrow_dataset().count_rows())


def collect(count: int, runs: int, work: Path) -> list[dict[str, Any]]:
    """Produce both copies of the topic, then every sample: per master, ``runs`` rounds of the sides alternated."""
    samples: list[dict[str, Any]] = []
    state_root = work / "state"
    root = StateRoot.open(state_root, create=True)
    with KafkaBroker.start(work / "kafka", jvm_options=PEER_JVM_OPTIONS) as broker:
        broker.create_topic(TOPIC, partitions=PARTITIONS)
        started = time.monotonic()
        broker.produce(TOPIC, records(count))
        produce_embedded(root, TOPIC, count)
        print(f"produced {count} records twice in {time.monotonic() - started:.1f} s", flush=True)
        for index, master in enumerate(MASTERS):
            for run, side in alternated(runs, SIDES):
                sample_dir = work / f"m{index}" / f"{side}-{run}"  # no "[": delta-rs takes it for a URL
                samples.append({"run": run + 1, **measure(side, master, broker.bootstrap, state_root, sample_dir,
                                                          count)})
                print(time.strftime("%H:%M:%S"), samples[-1], flush=True)
    return samples


def table_rows(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per groupcoord side and master: the medians of both sides side by side, their ratios and spreads."""
    merged = medians(samples, ("master",), FIGURES)
    extras = ("repetitions", *(f"{f}_spread" for f in FIGURES), "load_avg_1m")
    rows = []
    for ours in (OURS_KAFKA, OURS_EMBEDDED):
        for row in side_by_side([r for r in merged if r["side"] in (PEER, ours)], ("master",), FIGURES,
                                extras=extras, sides=(PEER, ours)):
            rows.append({"groupcoord_reads": ours.removeprefix("groupcoord_"),
                         **{k.replace(ours, "groupcoord"): v for k, v in row.items()}})
    return rows


def goal_checks(rows: list[dict[str, Any]]) -> list[Check]:
    """Issue 29's goal (:data:`GOAL`) and floor (:data:`FLOOR`) on the cold and warm records/s ratios."""
    checks = []
    for row in rows:
        where = f"[{row['groupcoord_reads']}, {row['master']}]"
        for figure in ("cold_records_per_s_ratio", "warm_records_per_s_ratio"):
            checks += [Check("peer_ingest", f"{figure}{where}", "speed", row[figure], ">=", GOAL),
                       Check("peer_ingest", f"{figure}_floor{where}", "speed", row[figure], ">=", FLOOR)]
    return checks


def main(full: bool, runs: int = REPETITIONS) -> None:
    """Measure every side on every master, ``runs`` times alternated; writes ``bench/results/peer_ingest.json``."""
    count = FULL_RECORDS if full else QUICK_RECORDS
    with tempfile.TemporaryDirectory(prefix="peer-ingest-") as tmp:
        samples = collect(count, runs, Path(tmp))
    rows = table_rows(samples)
    loads = [s["load_avg_1m"] for s in samples]
    write_result(
        "peer_ingest",
        title="Structured Streaming ingestion into Delta: groupcoord source and groupcoord-delta sink vs Spark's "
              "Kafka source and delta-spark, alternated",
        rows=rows,
        checks=goal_checks(rows),
        summary={"ratio": RATIO_MEANING, "records": count, "record_bytes": RECORD_BYTES, "partitions": PARTITIONS,
                 "repetitions": runs, "load_avg_1m": f"{min(loads)}-{max(loads)}",
                 "targets": f"records/s ratio >= {GOAL} (floor {FLOOR}), cold and warm"},
        extra={"samples": samples},
        notes=("One dev broker (Kafka 4.4.0) holds the topic, the state root's embedded topic log the same records. "
               "Each sample is one bin/spark-submit of bench/streaming_ingest_app.py reading the whole topic twice "
               "with Trigger.AvailableNow, each time into a new Delta table: cold_s from the command to the end of "
               "the first (JVM, Spark and Python workers start inside it), warm_s the second, timed in the process. "
               "spark_kafka_source: Spark 4.2's Kafka source into delta-spark; groupcoord_reads=kafka: "
               "readStream.format('groupcoord') from the same broker into groupcoord-delta (exactly once, the group's "
               "offsets committed); embedded: the same from the embedded topic log. The groupcoord sides' in-driver "
               "coordinator runs with group.initial.rebalance.delay.ms=0 (Kafka's shipped server.properties; the "
               "default 3000 adds 3 s before each query's first batch; Spark's source has no group). Per master, "
               f"{runs} rounds of the three sides, the order reversed every round; figures are medians, spreads "
               "min-max. MB = 10^6 bytes of values."),
    )
