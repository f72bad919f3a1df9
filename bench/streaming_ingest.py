"""Structured Streaming ingestion: ``readStream.format("groupcoord")`` into ``groupcoord-delta`` against Spark's
Kafka source into delta-spark, the same topic on one real broker, the same masters, one side after the other.

Three measurements (``bin/spark-submit bench/streaming_ingest_app.py``, :mod:`bench.streaming_ingest_app`):

- **throughput**: ``records`` records of 1 KB in 12 partitions (1,000,000 with ``--full``, 100,000 quick), read
  whole with AvailableNow into a new table; the second run inside one process is timed (warm). groupcoord reads the
  broker, and the same records from the embedded topic log; Spark's source reads the broker.
- **latency**: while one query runs batches back to back (the default trigger), a producer sends records at a
  steady 10,000 records/s (120,000 with ``--full``, 50,000 quick) to an empty topic; a record's end-to-end latency
  is its table commit's time (the Delta commit info) minus its Kafka timestamp (the producer's create time), after
  a warm-up of 120 records that each side has written before (its first write is not measured). Spark's
  source and groupcoord read the broker; groupcoord also reads the same steady stream produced into the embedded
  topic log (100 ms ticks of 1,000 records, each a topic-log commit, stamped with their create time).
- **hand-over** (groupcoord only: Spark's source has no group, every query reads every partition): two queries of
  one group read the steady stream; the first stops part way. For each partition that moved, the stall is the
  time between the last commit of its records by the first query's member and the first by the second's (the
  members are in the commit info).

Masters: ``local[4,4]`` (and ``local[2]`` with ``--full``). Command: ``python -m bench.run [--full]
streaming_ingest``; ``python -m bench.streaming_ingest --smoke`` runs every step on a few thousand records and writes
no result (a check that the script works).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import json
import re
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from bench.peer_ingest import (
    OURS_EMBEDDED,
    OURS_KAFKA,
    PARTITIONS,
    PEER,
    RECORD_BYTES,
    REPO,
    SPARK_SUBMIT,
    produce_embedded,
    records,
)
from bench.peer_targets import RATIO_MEANING, load_average, side_by_side
from bench.results_io import write_result
from bench.streaming_ingest_app import RESULT_KEY
from groupcoord.devbroker import PEER_JVM_OPTIONS, KafkaBroker
from groupcoord.state_root import StateRoot
from groupcoord.topics import ProducerRecord, TopicCatalog, TopicLog

APP = REPO / "bench" / "streaming_ingest_app.py"
RATE = 10_000
"""Records per second of the steady stream."""
PROCESS_TIMEOUT_S = 3600
READY_TIMEOUT_S = 300


@dataclass(frozen=True)
class Sizes:
    """The sizes of one run (quick or full)."""

    records: int
    latency_records: int
    masters: tuple[str, ...]


QUICK = Sizes(records=100_000, latency_records=50_000, masters=("local[4,4]",))
FULL = Sizes(records=1_000_000, latency_records=120_000, masters=("local[4,4]", "local[2]"))
SMOKE = Sizes(records=3_000, latency_records=6_000, masters=("local[2]",))
EMBEDDED_TICK_S = 0.1
"""The embedded steady stream's tick: one topic-log commit of ``RATE * EMBEDDED_TICK_S`` records."""


# --- processes -----------------------------------------------------------------------------------------------------

def _command(master: str, arguments: list[str]) -> list[str]:
    return [str(SPARK_SUBMIT), "--master", master, str(APP), *arguments]


def run_app(master: str, arguments: list[str], log: Path) -> list[dict[str, Any]]:
    """Run the app to its end; its result lines (a failure raises with the log's tail)."""
    with log.open("w") as stderr:
        done = subprocess.run(_command(master, arguments), cwd=REPO, stdout=subprocess.PIPE, stderr=stderr, text=True,
                              timeout=PROCESS_TIMEOUT_S, check=False)
    with log.open("a") as kept:
        kept.write(done.stdout)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(arguments[:2])} exited with {done.returncode}:\n"
                           + "\n".join(log.read_text().splitlines()[-30:]))
    return [json.loads(line) for line in done.stdout.splitlines() if RESULT_KEY in line]


class App:
    """A running app whose result lines are read as they come."""

    def __init__(self, master: str, arguments: list[str], log: Path) -> None:
        self._log = log.open("w")
        self.process = subprocess.Popen(_command(master, arguments), cwd=REPO, stdout=subprocess.PIPE,
                                        stderr=self._log, text=True)

    def next_result(self, timeout_s: float = READY_TIMEOUT_S) -> dict[str, Any]:
        """The next result line (the app's exit, or ``timeout_s`` without one, raises)."""
        deadline = time.monotonic() + timeout_s
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if RESULT_KEY in line:
                return dict(json.loads(line))
            if time.monotonic() > deadline:
                break
        self.process.kill()
        raise RuntimeError(f"the app ended or stalled without a result (exit {self.process.wait()}); see "
                           f"{self._log.name}")

    def wait(self) -> None:
        """Wait for its exit; a non-zero exit raises."""
        code = self.process.wait(PROCESS_TIMEOUT_S)
        self._log.close()
        if code != 0:
            raise RuntimeError(f"the app exited with {code}; see {self._log.name}")


def slug(master: str) -> str:
    """A master as a name for topics and directories (delta-rs takes "[" for a URL)."""
    return re.sub(r"\W+", "_", master)


# --- data ------------------------------------------------------------------------------------------------------------

def steady_stream(bootstrap: str, topic: str, count: int, rate: int = RATE) -> threading.Thread:
    """Produce ``count`` 1 KB records at ``rate`` records/s (batches every 10 ms), in a started thread."""
    from confluent_kafka import Producer

    def run() -> None:
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1, "acks": 1})
        per_tick, started = rate // 100, time.monotonic()
        source: Iterator[Any] = records(count)
        for tick in range(-(-count // per_tick)):  # every record: the last tick may be short
            for record in itertools.islice(source, per_tick):
                while True:
                    try:
                        producer.produce(topic, value=record.value, partition=record.partition)
                        break
                    except BufferError:
                        producer.poll(0.01)
            producer.poll(0)
            pause = started + (tick + 1) / 100 - time.monotonic()
            if pause > 0:
                time.sleep(pause)
        producer.flush(60)

    thread = threading.Thread(target=run, name="steady-stream", daemon=True)
    thread.start()
    return thread


def steady_embedded(root: StateRoot, topic: str, count: int, rate: int = RATE) -> threading.Thread:
    """Produce ``count`` 1 KB records at ``rate`` records/s into the embedded topic log (one commit per tick, the
    records stamped with their create time), in a started thread."""
    def run() -> None:
        log = TopicLog(root, topic)
        per_tick, started = int(rate * EMBEDDED_TICK_S), time.monotonic()
        source: Iterator[Any] = records(count)
        for tick in range(-(-count // per_tick)):  # every record: the last tick may be short
            now = dt.datetime.now(dt.UTC)
            log.produce([ProducerRecord(r.value, partition=r.partition, timestamp=now)
                         for r in itertools.islice(source, per_tick)])
            pause = started + (tick + 1) * EMBEDDED_TICK_S - time.monotonic()
            if pause > 0:
                time.sleep(pause)

    thread = threading.Thread(target=run, name="steady-embedded", daemon=True)
    thread.start()
    return thread


# --- reading the tables' logs ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Commit:
    """One Delta commit of a sink: its time (ms), the member that read it (groupcoord), the data files it added."""

    version: int
    timestamp_ms: int
    member: str | None
    files: tuple[str, ...]


def commits(table: Path) -> list[Commit]:
    """Every commit of the table, in order, from its ``_delta_log`` JSON files."""
    found = []
    for entry in sorted((table / "_delta_log").glob("*.json")):
        actions = [json.loads(line) for line in entry.read_text().splitlines() if line.strip()]
        info: dict[str, Any] = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
        files = tuple(a["add"]["path"] for a in actions if "add" in a)
        found.append(Commit(int(entry.stem), int(info.get("timestamp", 0)), info.get("groupcoord_member"), files))
    return found


def record_latencies_ms(table: Path, since_ms: float = 0.0) -> list[float]:
    """Each record's commit time minus its Kafka timestamp, in ms, for the records stamped at ``since_ms`` or
    later (the warm-up before it is left out)."""
    latencies: list[float] = []
    for commit in commits(table):
        for path in commit.files:
            column = pq.read_table(table / path, columns=["timestamp"]).column("timestamp")
            # delta-spark writes INT96 (read as ns), groupcoord-delta microseconds: compare in ms whatever the unit
            stamps = column.cast(pa.timestamp("ms", tz=column.type.tz), safe=False).cast(pa.int64()).to_pylist()
            latencies.extend(commit.timestamp_ms - stamp for stamp in stamps if stamp >= since_ms)
    return latencies


def percentile(values: list[float], fraction: float) -> float:
    """The ``fraction`` quantile (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def handover_stalls_s(table: Path, stopped_at: float) -> dict[int, float]:
    """For each partition the stopped query's member wrote last, the gap between its last commit of the partition
    and the next member's first."""
    by_partition: dict[int, list[tuple[int, str | None]]] = {}
    for commit in commits(table):
        for path in commit.files:
            for partition in set(pq.read_table(table / path, columns=["partition"]).column("partition").to_pylist()):
                by_partition.setdefault(partition, []).append((commit.timestamp_ms, commit.member))
    stalls = {}
    for partition, writes in by_partition.items():
        before = [(t, m) for t, m in writes if t <= stopped_at * 1000]
        if not before:
            continue
        last_time, old = before[-1]
        after = [t for t, m in writes if t > last_time and m != old]
        if after:
            stalls[partition] = (after[0] - last_time) / 1000
    return stalls


# --- the measurements ------------------------------------------------------------------------------------------------

def measure_throughput(side: str, master: str, bootstrap: str, root: StateRoot, work: Path,
                       count: int) -> dict[str, Any]:
    """Two AvailableNow runs in one process; the second (warm) is the figure."""
    app = ["throughput", "spark" if side == PEER else "groupcoord", "--topic", "ingest", "--work", str(work),
           "--state-root", str(root.path), "--runs", "2"]
    if side != OURS_EMBEDDED:
        app += ["--bootstrap", bootstrap]
    work.mkdir(parents=True, exist_ok=True)
    first, warm = run_app(master, app, work / "throughput.log")
    for run in (first, warm):
        rows = _rows(Path(run["sink"]))
        if rows != count:
            raise RuntimeError(f"{side} on {master}: the table holds {rows} rows, not {count}")
    return {"side": side, "master": master, "first_s": round(first["seconds"], 1), "warm_s": round(warm["seconds"], 1),
            "records_per_s": round(count / warm["seconds"]),
            "mb_per_s": round(count * RECORD_BYTES / 1e6 / warm["seconds"], 1), "load_avg_1m": load_average()}


def _rows(table: Path) -> int:
    from deltalake import DeltaTable

    return int(DeltaTable(str(table)).to_pyarrow_dataset().count_rows())


def measure_latency(side: str, master: str, broker: KafkaBroker, root: StateRoot, work: Path,
                    count: int) -> dict[str, Any]:
    """The steady stream into one query; p50 and p99 of the records' end-to-end latency."""
    topic = f"latency-{side}-{slug(master)}"
    where = ["--bootstrap", broker.bootstrap]
    if side == OURS_EMBEDDED:
        TopicCatalog(root).create(topic, PARTITIONS)
        where = []
    else:
        broker.create_topic(topic, partitions=PARTITIONS)
    work.mkdir(parents=True, exist_ok=True)
    warm_up = 10 * PARTITIONS
    app = App(master, ["latency", "spark" if side == PEER else "groupcoord", "--topic", topic, "--work", str(work),
                       *where, "--state-root", str(root.path), "--expect", str(count), "--warm-up", str(warm_up)],
              work / "latency.log")

    def stream(records: int) -> threading.Thread:
        return steady_embedded(root, topic, records) if side == OURS_EMBEDDED else \
            steady_stream(broker.bootstrap, topic, records)

    stream(warm_up).join()  # each side's first write (JVM classes, the table's first commit) is not measured
    ready = app.next_result()
    stream(count).join()
    done = app.next_result(PROCESS_TIMEOUT_S)
    app.wait()
    latencies = record_latencies_ms(Path(done["sink"]), since_ms=ready["at"] * 1000)
    return {"side": side, "master": master, "records": len(latencies), "p50_ms": round(percentile(latencies, 0.5)),
            "p99_ms": round(percentile(latencies, 0.99)), "load_avg_1m": load_average()}


def measure_handover(master: str, broker: KafkaBroker, root: StateRoot, work: Path, count: int) -> dict[str, Any]:
    """Two queries of one group on the steady stream; the first stops after a third of it."""
    topic = f"handover-{slug(master)}"
    broker.create_topic(topic, partitions=PARTITIONS)
    work.mkdir(parents=True, exist_ok=True)
    seconds = count / RATE
    app = App(master, ["handover", "groupcoord", "--topic", topic, "--work", str(work), "--bootstrap",
                       broker.bootstrap, "--state-root", str(root.path), "--expect", str(count), "--stop-after",
                       f"{seconds / 3:.1f}"], work / "handover.log")
    warm_up = 10 * PARTITIONS  # records before "ready" (both queries ran a batch and own partitions)
    steady_stream(broker.bootstrap, topic, warm_up).join()
    app.next_result()  # ready
    producer = steady_stream(broker.bootstrap, topic, count - warm_up)
    stopped_at = app.next_result(PROCESS_TIMEOUT_S)["stopped_at"]
    producer.join()
    done = app.next_result(PROCESS_TIMEOUT_S)
    app.wait()
    stalls = handover_stalls_s(Path(done["sink"]), stopped_at)
    return {"master": master, "moved_partitions": len(stalls),
            "stall_median_s": round(statistics.median(stalls.values()), 2) if stalls else None,
            "stall_max_s": round(max(stalls.values()), 2) if stalls else None, "load_avg_1m": load_average()}


def main(full: bool, sizes: Sizes | None = None, *, record: bool | None = None) -> None:
    """Produce, then each measurement, the peer first; writes ``bench/results/streaming_ingest*.json`` unless
    ``record`` is false (by default: unless ``sizes`` are explicit, a smoke run)."""
    smoke = not record if record is not None else sizes is not None
    sizes = sizes or (FULL if full else QUICK)
    throughput: list[dict[str, Any]] = []
    latency: list[dict[str, Any]] = []
    handover: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="streaming-ingest-") as tmp:
        work = Path(tmp)
        root = StateRoot.open(work / "state", create=True)
        with KafkaBroker.start(work / "kafka", jvm_options=PEER_JVM_OPTIONS) as broker:
            broker.create_topic("ingest", partitions=PARTITIONS)
            started = time.monotonic()
            broker.produce("ingest", records(sizes.records))
            produce_embedded(root, "ingest", sizes.records)
            print(f"produced {sizes.records} records twice in {time.monotonic() - started:.1f} s", flush=True)
            for master in sizes.masters:
                case = work / slug(master)
                for side in (PEER, OURS_KAFKA, OURS_EMBEDDED):
                    throughput.append(measure_throughput(side, master, broker.bootstrap, root, case / side,
                                                         sizes.records))
                    print(throughput[-1], flush=True)
                for side in (PEER, OURS_KAFKA, OURS_EMBEDDED):
                    latency.append(measure_latency(side, master, broker, root, case / f"latency-{side}",
                                                   sizes.latency_records))
                    print(latency[-1], flush=True)
                handover.append(measure_handover(master, broker, root, case / "handover", sizes.latency_records))
                print(handover[-1], flush=True)
    if not smoke:
        _write(sizes, throughput, latency, handover)


def _write(sizes: Sizes, throughput: list[dict[str, Any]], latency: list[dict[str, Any]],
           handover: list[dict[str, Any]]) -> None:
    figures = ("warm_s", "records_per_s", "mb_per_s")
    rows = []
    for ours in (OURS_KAFKA, OURS_EMBEDDED):
        for row in side_by_side([r for r in throughput if r["side"] in (PEER, ours)], ("master",), figures,
                                extras=("first_s", "load_avg_1m"), sides=(PEER, ours)):
            rows.append({"groupcoord_reads": ours.removeprefix("groupcoord_"), **{
                k.replace(ours, "groupcoord"): v for k, v in row.items()}})
    common = {"ratio": RATIO_MEANING, "records": sizes.records, "record_bytes": RECORD_BYTES,
              "partitions": PARTITIONS}
    write_result("streaming_ingest", title="Structured Streaming ingestion into Delta: groupcoord source and "
                 "groupcoord-delta sink vs Spark's Kafka source and delta-spark", rows=rows, summary=common,
                 notes=("Each side reads the whole topic with Trigger.AvailableNow into a new Delta table, twice in "
                        "one spark-submit process; warm_s is the second run. groupcoord_reads=kafka: the same "
                        "broker as Spark's source (librdkafka, Arrow batches); embedded: the same records from the "
                        "state root's embedded topic log. MB = 10^6 bytes of values."))
    latency_rows = []
    for ours in (OURS_KAFKA, OURS_EMBEDDED):
        for row in side_by_side([r for r in latency if r["side"] in (PEER, ours)], ("master",), ("p50_ms", "p99_ms"),
                                extras=("records", "load_avg_1m"), sides=(PEER, ours)):
            latency_rows.append({"groupcoord_reads": ours.removeprefix("groupcoord_"), **{
                k.replace(ours, "groupcoord"): v for k, v in row.items()}})
    write_result("streaming_ingest_latency", title="Structured Streaming end-to-end latency at a steady "
                 f"{RATE:,} records/s", rows=latency_rows,
                 summary={"ratio": RATIO_MEANING, "rate_per_s": RATE, "records": sizes.latency_records},
                 notes=("A producer sends 1 KB records at a steady rate to an empty 12-partition topic while one "
                        "query runs batches back to back (the default trigger); a record's latency is its Delta "
                        "commit's time minus its create time. groupcoord_reads=kafka: the broker (10 ms producer "
                        "ticks); embedded: the state root's embedded topic log (100 ms ticks, one topic-log commit "
                        "each), against the same Spark-on-Kafka row."))
    write_result("streaming_ingest_handover", title="Structured Streaming hand-over: how long moved partitions stall",
                 rows=handover, summary={"rate_per_s": RATE, "records": sizes.latency_records},
                 notes=("Two groupcoord queries of one group read a steady stream; the first stops after a third of "
                        "it. Per moved partition: the time from its last commit by the stopped query's member to the "
                        "first by the other's. Spark's Kafka source has no counterpart: its queries share no group "
                        "and each reads every partition."))


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="Structured Streaming ingestion benchmark (bench.run runs it).")
    parser.add_argument("--full", action="store_true", help="1,000,000 records, two masters")
    parser.add_argument("--smoke", action="store_true", help="every step on a few thousand records; no result file")
    parser.add_argument("--master", action="append", dest="masters",
                        help="a Spark master instead of the mode's, repeatable (results are written)")
    options = parser.parse_args()
    chosen = SMOKE if options.smoke else FULL if options.full else QUICK
    if options.masters:
        chosen = dataclasses.replace(chosen, masters=tuple(options.masters))
    main(options.full, chosen, record=not options.smoke)
