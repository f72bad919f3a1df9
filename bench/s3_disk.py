"""The state root on S3 against local disk, one run: record-log commits, offset commits through ``serve``, the load
after 1,000,000 offset commits, and the ``groupcoord-delta`` sink's writer.

Three stores, each fresh: a local directory; S3 on versitygw over loopback (:mod:`bench.s3_server`), which hides
S3's per-request latency; and the same server behind :mod:`bench.s3_proxy` delaying every request by 20 ms (about
what a request to S3 costs from inside its region), which also counts the requests. Cases, per store:

- ``record-log append``: :data:`APPENDS` sequential appends of 100 offset-commit records to a fresh record log (its
  own writer: data file, then the commit's put-if-absent; :func:`bench.s3_append.own_append`);
- ``serve offset commits``: ``groupcoord serve --no-spark`` on a fresh state root there, :data:`COMMITTERS` clients
  each committing :data:`PARTITIONS_EACH` offsets per OffsetCommit, closed loop for :data:`SERVE_SECONDS`
  (:mod:`bench.peer_commits`'s committers): acknowledged commits per second, and how many record-log commits (Delta
  versions) they took: the group commit folds every request that arrives during a commit into the next one;
- ``load after 1,000,000 offset commits``: :mod:`bench.load_time`'s log (written once per store: local, and S3,
  which the proxied case then reads through the proxy), loaded by a new holder: read plus replay;
- ``sink writer``: :data:`SINK_BATCHES` batches of :data:`SINK_ROWS` records over 4 partitions through the sink's
  writer (:func:`groupcoord.sink.commit.append_batch`: a Parquet object per partition, then one delta-rs commit with
  an app transaction per partition): what the executors and the driver of a ``groupcoord-delta`` query do per batch,
  in one process, without Spark's own per-batch cost.

``python -m bench.run s3_disk`` writes ``bench/results/s3_disk.json``.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from bench.load_time import time_load, write_history
from bench.peer_commits import TOPIC, Committer, Load, _drive
from bench.peer_targets import Endpoint, wait_for_group_coordinator
from bench.results_io import write_result
from bench.s3_append import own_append
from bench.s3_proxy import ProxyProcess
from bench.s3_server import S3Server, versitygw
from bench.serve_process import ServeProcess
from groupcoord.sink.commit import append_batch, ensure_table
from groupcoord.sink.plan import BatchRange
from groupcoord.state_root import StateRoot
from groupcoord.storage.location import TableLocation, parse_location
from groupcoord.storage.tables import open_table, table_dataset
from groupcoord.topics import TopicCatalog

LATENCY_MS = 20.0
APPENDS = 100
COMMITTERS, PARTITIONS_EACH, SERVE_SECONDS = 20, 50, 15.0
SINK_BATCHES, SINK_ROWS, SINK_PARTITIONS = 20, 5000, 4
LOG_COMMITS = 1_000_000
READY_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Store:
    """Where a case's tables live: ``local`` (a directory) or an S3 bucket reached at ``env``'s endpoint."""

    name: str
    base: str
    env: dict[str, str]
    proxy: ProxyProcess | None = None

    def location(self, child: str) -> TableLocation:
        """A fresh location under the store."""
        return parse_location(f"{self.base}/{child}", environ=self.env or os.environ)

    def requests(self) -> int | None:
        """Requests the proxy has forwarded so far (``None`` without one)."""
        return self.proxy.requests() if self.proxy is not None else None


def _ms(values: list[float]) -> dict[str, float]:
    ms = sorted(v * 1000 for v in values)
    return {"p50_ms": round(statistics.median(ms), 1), "p99_ms": round(ms[min(len(ms) - 1, int(len(ms) * 0.99))], 1),
            "mean_ms": round(statistics.fmean(ms), 1)}


def _per(count: int | None, total: int) -> float | None:
    return None if count is None or total == 0 else round(count / total, 1)


def record_log_append(store: Store) -> dict[str, Any]:
    """Sequential appends to a fresh record log."""
    before = store.requests()
    took = own_append(store.location("append-log"), APPENDS, 100)
    after = store.requests()
    return {"case": "record-log append", **_ms(took), "per_s": round(len(took) / sum(took), 1),
            "requests_per_op": _per(None if before is None or after is None else after - before, APPENDS)}


def serve_commits(store: Store, scratch: Path) -> dict[str, Any]:
    """Closed-loop offset commits through ``groupcoord serve`` on a state root in ``store``."""
    where = store.location("serve-root")
    root = StateRoot.open(where, create=True)
    TopicCatalog(root).create(TOPIC, PARTITIONS_EACH)
    serve = ServeProcess(where.uri, log_path=scratch / f"serve-{store.name.split()[0]}.log", env=store.env)
    try:
        address = serve.wait_ready(timeout=READY_TIMEOUT_S)
        if address is None:
            raise RuntimeError(f"serve did not become ready on {where}:\n{serve.log_tail()}")
        endpoint = Endpoint("groupcoord", *address, serve.proc.pid)
        asyncio.run(wait_for_group_coordinator(endpoint))
        versions, requests = open_table(root.log_path).version(), store.requests()
        rows = asyncio.run(_closed_loop(endpoint))
        log_commits = open_table(root.log_path).version() - versions
        after = store.requests()
    finally:
        serve.close()
    acked, latencies, elapsed = rows
    return {"case": "serve offset commits", **_ms(latencies), "per_s": round(acked / elapsed, 1),
            "log_commits": log_commits, "commits_per_log_commit": _per(acked, log_commits),
            "requests_per_op": _per(None if requests is None or after is None else after - requests, log_commits)}


async def _closed_loop(endpoint: Endpoint) -> tuple[int, list[float], float]:
    committers = [await Committer.open(endpoint, i, PARTITIONS_EACH) for i in range(COMMITTERS)]
    try:
        elapsed = await _drive(committers, Load(COMMITTERS, PARTITIONS_EACH, SERVE_SECONDS))
    finally:
        for committer in committers:
            await committer.connection.close()
    latencies = [latency for c in committers for latency in c.latencies]
    return len(latencies), latencies, elapsed


def load_after_commits(store: Store, log: TableLocation, written: dict[str, Any]) -> dict[str, Any]:
    """A new holder's load of the 1,000,000-commit log at ``log`` (reached through ``store``)."""
    before = store.requests()
    loaded = time_load(parse_location(log.uri, environ=store.env or os.environ))
    after = store.requests()
    return {"case": f"load after {LOG_COMMITS:,} offset commits", "p50_ms": round(loaded["load_s"] * 1000, 1),
            "p99_ms": None, "mean_ms": None, "per_s": None, "log_commits": loaded["log_version"],
            "requests_per_op": None if before is None or after is None else after - before,
            "write_s": written["write_s"], "read_s": loaded["read_s"], "replay_s": loaded["replay_s"]}


def sink_writer(store: Store, *, kept: bool) -> dict[str, Any]:
    """Batches through the sink's writer into a fresh table: the table opened for every batch (``kept`` false: as
    the ``groupcoord-delta`` sink's driver commits, in a Python worker that keeps nothing between batches) or one
    handle brought up to date (``kept``: as each member task of the members engine does)."""
    table = store.location(f"sink-{'kept' if kept else 'opened'}")
    schema = pa.schema([pa.field("topic", pa.string(), nullable=False),
                        pa.field("partition", pa.int32(), nullable=False),
                        pa.field("offset", pa.int64(), nullable=False), pa.field("value", pa.binary())])
    ensure_table(table, schema)
    handle = open_table(table) if kept else None
    per = SINK_ROWS // SINK_PARTITIONS
    took = []
    before = store.requests()
    for batch in range(SINK_BATCHES):
        low = batch * per
        rows = pa.table({"topic": ["events"] * SINK_ROWS,
                         "partition": pa.array([p for p in range(SINK_PARTITIONS) for _ in range(per)], pa.int32()),
                         "offset": [low + i for _ in range(SINK_PARTITIONS) for i in range(per)],
                         "value": [os.urandom(100) for _ in range(SINK_ROWS)]}, schema=schema)
        ranges = {("events", p): BatchRange(low, low + per) for p in range(SINK_PARTITIONS)}
        started = time.perf_counter()
        append_batch(table, "bench", ranges, rows.to_batches(), resets=dict, table=handle)
        took.append(time.perf_counter() - started)
    after = store.requests()
    held = table_dataset(open_table(table)).count_rows()
    if held != SINK_ROWS * SINK_BATCHES:
        raise RuntimeError(f"the sink table on {store.name} holds {held} rows, not the {SINK_ROWS * SINK_BATCHES} "
                           "written")
    return {"case": f"sink writer, table {'kept open' if kept else 'opened per batch'}", **_ms(took),
            "rows_written": SINK_ROWS * SINK_BATCHES, "rows_in_table": held,
            "per_s": round(SINK_ROWS * len(took) / sum(took)),
            "requests_per_op": _per(None if before is None or after is None else after - before, SINK_BATCHES)}


@contextmanager
def _stores(scratch: Path, server: S3Server) -> Iterator[list[Store]]:
    server.create_bucket("bench")
    proxy = ProxyProcess(server.port, delay_ms=LATENCY_MS)
    try:
        yield [Store("local disk", str(scratch / "local"), {}),
               Store("S3 (loopback)", "s3://bench/loopback", server.env),
               Store(f"S3 + {LATENCY_MS:g} ms a request", "s3://bench/slow",
                     {**server.env, "AWS_ENDPOINT_URL": proxy.endpoint}, proxy)]
    finally:
        proxy.close()


def main(full: bool) -> None:
    """Every case on every store (``full`` changes nothing); writes ``bench/results/s3_disk.json``."""
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="groupcoord-s3-bench-") as work, \
            versitygw(Path(work) / "s3") as server, _stores(Path(work), server) as stores:
        (Path(work) / "local").mkdir()
        histories: dict[str, tuple[TableLocation, dict[str, Any]]] = {}
        for store in stores:
            cases: list[Callable[[Store], dict[str, Any]]] = [
                record_log_append, lambda where: serve_commits(where, Path(work)),
                lambda where: sink_writer(where, kept=False), lambda where: sink_writer(where, kept=True)]
            for case in cases:
                row = {"store": store.name, **case(store)}
                rows.append(row)
                print(row, flush=True)
            # the 1,000,000-commit log: written on disk and on S3 (loopback); the proxied store reads S3's
            kind = "local" if store.name == "local disk" else "s3"
            if kind not in histories:
                log = store.location("history-log")
                histories[kind] = (log, write_history(log, commits=LOG_COMMITS))
            log, written = histories[kind]
            row = {"store": store.name, **load_after_commits(store, log, written)}
            rows.append(row)
            print(row, flush=True)
    columns = ("store", "case", "p50_ms", "p99_ms", "mean_ms", "per_s", "log_commits", "commits_per_log_commit",
               "requests_per_op", "write_s", "read_s", "replay_s", "rows_written", "rows_in_table")
    write_result(
        "s3_disk",
        title="State root on S3 against local disk (versitygw on loopback, and +20 ms a request)",
        rows=[{column: row.get(column) for column in columns} for row in rows],
        summary={"latency_injected_ms": LATENCY_MS, "appends": APPENDS, "committers": COMMITTERS,
                 "partitions_per_commit": PARTITIONS_EACH, "serve_seconds": SERVE_SECONDS,
                 "sink_batches": SINK_BATCHES, "sink_rows_per_batch": SINK_ROWS},
        notes=("One run, each case on a fresh table or state root. per_s: appends/s (record-log append), "
               "acknowledged OffsetCommit requests/s of 50 offsets each (serve), records/s (sink writer). "
               "p50/p99/mean: per append, per acknowledged OffsetCommit, per sink batch; for the load, p50 is the "
               "load's time. requests_per_op (counted by the proxy, so only on the +20 ms store): S3 requests per "
               "record-log append, per record-log commit of serve (the materialized tables' writes included), per "
               "sink batch, and for the whole load. commits_per_log_commit: OffsetCommit requests acknowledged per "
               "record-log commit: the group commit's amortisation. The proxy is a Python process on the same 2 "
               "cores; versitygw too."),
    )
