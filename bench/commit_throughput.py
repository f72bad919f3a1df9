"""Commit throughput through the batcher into the Delta record log, with and without the materializer.

The workload: committers (consumers) each commit the offsets of their ``partitions_each`` partitions per request;
200 committers x 50 partitions cover 10,000 partitions of 200 groups, so the state is 10,000 offsets. Cases:

- **capacity (log only)**: closed loop. Each committer sends its next request as soon as the previous one is
  acknowledged: the most the log can make durable.
- **at target rate (log only)**: open loop at 100,000 partition offsets per second, the issue's target. Each
  committer sends a request every ``committers * partitions_each / rate`` seconds whatever the latency (so slow
  commits cannot hide behind fewer requests), and latency is measured from the moment a request was due. As the
  coordinator host does, a snapshot of the whole state is written every ``log.snapshot.interval`` (100,000) records.
- **at target rate (log + materializer)**: the same, and every durable batch is handed to the :class:`Materializer`
  (flushing every 250 ms in the same process, as ``serve`` runs it); its lag behind the log is sampled every 100 ms.
- **sustained** (``--full`` only): the log-only target-rate case for 30 minutes, plus record-log maintenance
  (:func:`maintain_record_log`: planned outside the commit slot, one commit in it, garbage collected outside it)
  every minute, as the holder's timer does. Ack p99 per minute, each maintenance run's duration and the live files
  after it, and a cold load of the log (as a new holder would do) after the first minute and near the end. A
  shorter run, printed rather than recorded, e.g. with 5x the snapshot rate to reach the 30-minute run's segment
  count sooner: ``python -m bench.commit_throughput --sustained 360 --snapshot-interval 20000``.

Records are built once per committer up front, so the benchmark measures the storage path, not record creation.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import gc
import json
import os
import random
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.results_io import write_result
from groupcoord.coordinator.encoded import EncodedRecord
from groupcoord.coordinator.records import (
    OffsetCommitRecord,
    OffsetValue,
    encode_record,
    new_offset_commit_record,
)
from groupcoord.log.batcher import BatcherConfig, CommitBatcher, CommitTiming
from groupcoord.log.delta import DeltaRecordLog
from groupcoord.log.maintenance import STEPS, maintain_record_log
from groupcoord.state.materializer import CommittedBatch, Materializer, run_materializer
from groupcoord.state_root import StateRoot

GROUPS = 1000
PARTITIONS = 10_000
TARGET_RATE = 100_000
SNAPSHOT_INTERVAL = 100_000
EPOCH = 1


def offset_record(group: int, partition: int, value: int) -> OffsetCommitRecord:
    """The core's record of one committed offset of topic ``events``."""
    return new_offset_commit_record(f"g{group}", "events", partition, OffsetValue(
        offset=value, leader_epoch=-1, metadata="", commit_timestamp_ms=1_714_550_400_000 + value))


@dataclass(frozen=True, kw_only=True)
class Workload:
    """``committers`` consumers, each committing ``partitions_each`` offsets per request; ``rate`` offsets/s in
    total (open loop) or ``None`` (closed loop)."""

    committers: int
    partitions_each: int
    seconds: float
    rate: float | None = None


@dataclass
class _Run:
    """What one run observed."""

    latencies: list[tuple[float, float]] = field(default_factory=list)  # (due, latency) seconds from the start
    acks: list[tuple[float, int, float]] = field(default_factory=list)  # (due, log version, acknowledged) instants
    timings: dict[int, CommitTiming] = field(default_factory=dict)  # the batcher's timing of each commit
    lags: list[tuple[float, float]] = field(default_factory=list)  # (time, materializer lag seconds)
    loop_lags: list[float] = field(default_factory=list)  # how late 10 ms sleeps of the event loop woke up
    offsets: int = 0
    snapshots: int = 0
    maintenance: int = 0
    maintenance_log: list[dict[str, Any]] = field(default_factory=list)
    maintenance_errors: list[str] = field(default_factory=list)
    maintenance_started: float | None = None
    """Seconds into the run at which the record-log maintenance in progress started (None when none is)."""
    maintenance_step: str | None = None
    """The step (``maintenance.STEPS``) the record-log maintenance in progress is in."""
    loads: list[dict[str, Any]] = field(default_factory=list)


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] if ordered else 0.0


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


class _Holder:
    """The storage side of a lease holder: record log, batcher, materializer, snapshots (as the host wires them)."""

    def __init__(self, root: StateRoot, *, run: _Run, state: list[EncodedRecord], materialize: bool,
                 snapshot_interval: int = SNAPSHOT_INTERVAL) -> None:
        self.root = root
        self.log = DeltaRecordLog(root.log_path)
        self.snapshot_interval = snapshot_interval
        self.run = run
        self.materializer = Materializer(root) if materialize else None
        self.state = state  # what a snapshot writes: one record per partition offset the workload commits
        self.since_snapshot = 0
        self.snapshotting = False

    async def start(self) -> None:
        version = await asyncio.to_thread(self.log.takeover, EPOCH, expected_version=-1)
        self.batcher = CommitBatcher(self.log, version=version, config=BatcherConfig(),
                                     on_commit=lambda timing: self.run.timings.__setitem__(timing.version, timing))
        self.tasks = [asyncio.create_task(self._sample_loop_lag())]
        if self.materializer is not None:
            self.tasks += [asyncio.create_task(run_materializer(self.materializer)),
                           asyncio.create_task(self._sample_lag())]
        gc.freeze()  # as the host does after its load: the prebuilt requests stay out of full collections
        self.started = time.monotonic()

    async def commit(self, typed: tuple[OffsetCommitRecord, ...], encoded: list[EncodedRecord]) -> int:
        """Append ``encoded`` (and hand ``typed`` to the materializer); returns the log version."""
        version = await self.batcher.append(encoded)
        if self.materializer is not None:
            self.materializer.submit(CommittedBatch(records=typed, log_version=version, epoch=EPOCH,
                                                    committed_at=dt.datetime.now(dt.UTC)))
        self.run.offsets += len(encoded)
        self.since_snapshot += len(encoded)
        if self.since_snapshot >= self.snapshot_interval and not self.snapshotting:
            self.snapshotting = True
            self.tasks.append(asyncio.create_task(self._snapshot()))
        return version

    async def _snapshot(self) -> None:
        records = self.state
        try:
            version = await self.batcher.snapshot(records)
            if self.materializer is not None:
                self.materializer.submit(CommittedBatch(records=tuple(records), log_version=version, epoch=EPOCH,
                                                        committed_at=dt.datetime.now(dt.UTC), snapshot=True))
            self.since_snapshot = 0
            self.run.snapshots += 1
        finally:
            self.snapshotting = False

    async def maintain_every(self, seconds: float) -> None:
        """Record-log maintenance (only its commit in the commit slot), then state-table compaction, every
        ``seconds``; records how long each run took and the live files after it."""
        while True:
            await asyncio.sleep(seconds)
            started = time.monotonic()
            self.run.maintenance_started = started - self.started
            try:
                report = await maintain_record_log(self.batcher, self.log, on_step=self._note_step)
            except Exception as exc:  # recorded, not fatal: the holder's own timer retries too
                self.run.maintenance_errors.append(f"{started - self.started:.0f} s: {exc!r}")
                continue
            finally:
                self.run.maintenance_started = self.run.maintenance_step = None
            if self.materializer is not None:
                await asyncio.to_thread(self.materializer.maintain)
            live = await asyncio.to_thread(lambda: len(self.log.table().file_uris()))
            self.run.maintenance += 1
            self.run.maintenance_log.append({
                "at_s": round(started - self.started), "took_s": round(time.monotonic() - started, 2),
                "dropped_segments": len(report.dropped), "compacted_files": report.compacted_files,
                "vacuumed_files": report.vacuumed_files, "live_files": live, "step_s": dict(report.step_seconds)})

    def _note_step(self, name: str) -> None:
        self.run.maintenance_step = name

    async def cold_load(self, label: str) -> None:
        """Time a fresh load of the log (a new holder's first step) while the writer keeps going."""
        started = time.monotonic()
        loaded = await asyncio.to_thread(DeltaRecordLog(self.root.log_path).load)
        self.run.loads.append({"at": label, "load_s": round(time.monotonic() - started, 2),
                               "records_loaded": len(loaded.records), "log_version": loaded.version})

    async def _sample_loop_lag(self) -> None:
        """Event-loop lag: on a machine short of CPU the loop (and so every acknowledgement) runs late."""
        while True:
            due = time.monotonic() + 0.01
            await asyncio.sleep(0.01)
            self.run.loop_lags.append(max(0.0, time.monotonic() - due))

    async def _sample_lag(self) -> None:
        assert self.materializer is not None
        while True:
            await asyncio.sleep(0.1)
            self.run.lags.append((time.monotonic() - self.started, self.materializer.lag().seconds))

    async def stop(self) -> None:
        gc.unfreeze()
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        await self.batcher.close()
        if self.materializer is not None:
            await asyncio.to_thread(self.materializer.flush)
        await asyncio.to_thread(self.log.close)


_Request = tuple[tuple[OffsetCommitRecord, ...], list[EncodedRecord]]


def _prebuilt(workload: Workload) -> list[_Request]:
    built: list[_Request] = []
    for member in range(workload.committers):
        typed = tuple(offset_record(member % GROUPS, (member * workload.partitions_each + p) % PARTITIONS, member)
                      for p in range(workload.partitions_each))
        built.append((typed, [encode_record(r) for r in typed]))
    return built


def _new_holder(path: Path, requests: list[_Request], *, materialize: bool,
                snapshot_interval: int = SNAPSHOT_INTERVAL) -> _Holder:
    state = {record.key: record for _, encoded in requests for record in encoded}
    return _Holder(StateRoot.open(path, create=True), run=_Run(), state=list(state.values()),
                   materialize=materialize, snapshot_interval=snapshot_interval)


async def _drive(holder: _Holder, workload: Workload, requests: list[_Request],
                 extra: Callable[[], list[asyncio.Task[Any]]] | None = None) -> float:
    """Run ``workload`` against ``holder``; returns the elapsed seconds."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    end = start + workload.seconds
    inflight: set[asyncio.Task[None]] = set()

    async def one(index: int, due: float) -> None:
        version = await holder.commit(*requests[index])
        acked = loop.time()  # asyncio's clock is time.monotonic(), the batcher's too
        holder.run.latencies.append((due - start, acked - due))
        holder.run.acks.append((due, version, acked))

    async def closed(index: int) -> None:
        while loop.time() < end:
            await one(index, loop.time())

    async def opened(index: int, period: float) -> None:
        due = start + random.uniform(0, period)
        while due < end:
            await asyncio.sleep(max(0.0, due - loop.time()))
            task = loop.create_task(one(index, due))
            inflight.add(task)
            task.add_done_callback(inflight.discard)
            due += period

    background = extra() if extra else []
    if workload.rate is None:
        await asyncio.gather(*(closed(i) for i in range(workload.committers)))
    else:
        period = workload.committers * workload.partitions_each / workload.rate
        await asyncio.gather(*(opened(i, period) for i in range(workload.committers)))
        if inflight:
            await asyncio.gather(*inflight)
    elapsed = loop.time() - start
    for task in background:
        task.cancel()
    await asyncio.gather(*background, return_exceptions=True)
    return elapsed


_STEPS = ("wait_for_batch_close", "wait_for_snapshot_prepare", "commit", "executor_handoff", "ack_delivery")


def _latency_parts(run: _Run) -> dict[str, Any]:
    """The acknowledgement latency split into its steps, on average over all requests and over the slowest 1 %
    (those at or above the p99): waiting for the batch to close (linger, minimum commit interval, a commit in
    flight, a late event loop), waiting for a snapshot's preparation, the commit in the executor (by phase: rows
    built, data file written, fsyncs before the link, link and directory fsync), its return to the event loop,
    and the waiter's wake-up."""
    rows = []
    for due, version, acked in run.acks:
        timing = run.timings.get(version)
        if timing is not None:
            rows.append((acked - due, (timing.closed - due, timing.started - timing.closed,
                                       timing.written - timing.started,
                                       timing.resolved - timing.written, acked - timing.resolved), timing))
    if not rows:
        return {}
    threshold = _p([latency for latency, _, _ in rows], 0.99)

    def mean_parts(selected: Sequence[tuple[float, tuple[float, ...], CommitTiming]]) -> dict[str, float]:
        parts = {step: _ms(sum(r[1][i] for r in selected) / len(selected)) for i, step in enumerate(_STEPS)}
        phases = sorted({name for r in selected for name in r[2].phases})
        return {**parts, **{f"commit_{name}": _ms(sum(r[2].phases.get(name, 0.0) for r in selected) / len(selected))
                            for name in phases}}

    data_commits = [t for t in run.timings.values() if t.kind == "records"]
    commit_durations = [t.written - t.started for t in data_commits]
    phase_p99 = {f"commit_{name}_p99_ms": _ms(_p([t.phases.get(name, 0.0) for t in data_commits], 0.99))
                 for name in sorted({n for t in data_commits for n in t.phases})}
    slowest = [r for r in rows if r[0] >= threshold]
    return {"all_requests_mean_ms": mean_parts(rows), "slowest_1pct_mean_ms": mean_parts(slowest),
            "slowest_1pct_share_in_snapshot_commits": round(
                sum(1 for r in slowest if r[2].kind == "snapshot") / len(slowest), 2),
            "requests_share_in_snapshot_commits": round(sum(1 for r in rows if r[2].kind == "snapshot") / len(rows), 3),
            "commit_p50_ms": _ms(_p(commit_durations, 0.5)),
        "commit_p99_ms": _ms(_p(commit_durations, 0.99)), **phase_p99}


def _summarize(case: str, workload: Workload, holder: _Holder, elapsed: float) -> dict[str, Any]:
    run = holder.run
    latencies = [latency for _, latency in run.latencies]
    lags = [lag for _, lag in run.lags]
    commits = holder.batcher.commits
    return {
        "case": case,
        "load_avg_1m": round(os.getloadavg()[0], 1),
        "committers": workload.committers,
        "partitions_per_commit": workload.partitions_each,
        "offered_offsets_per_s": "closed loop" if workload.rate is None else round(workload.rate),
        "seconds": round(elapsed, 1),
        "offsets_per_s": round(run.offsets / elapsed),
        "ack_p50_ms": _ms(_p(latencies, 0.5)),
        "ack_p99_ms": _ms(_p(latencies, 0.99)),
        "ack_max_ms": _ms(max(latencies, default=0.0)),
        "loop_lag_p99_ms": _ms(_p(run.loop_lags, 0.99)),
        "delta_commits_per_s": round(commits / elapsed, 1),
        "files_per_hour": round(commits / elapsed * 3600),
        "snapshots": run.snapshots,
        "materializer_lag_p99_s": round(_p(lags, 0.99), 2) if lags else "off",
        "materializer_lag_max_s": round(max(lags), 2) if lags else "off",
        "state_commits_per_s": round(holder.materializer.commits / elapsed, 1) if holder.materializer else "off",
        "ack_breakdown": _latency_parts(run),
    }


async def _case(path: Path, case: str, workload: Workload, *, materialize: bool) -> dict[str, Any]:
    requests = _prebuilt(workload)
    holder = _new_holder(path, requests, materialize=materialize)
    await holder.start()
    elapsed = await _drive(holder, workload, requests)
    await holder.stop()
    return _summarize(case, workload, holder, elapsed)


async def _sustained(path: Path, workload: Workload, *, maintenance_s: float = 60.0,
                     snapshot_interval: int = SNAPSHOT_INTERVAL) -> dict[str, Any]:
    requests = _prebuilt(workload)
    holder = _new_holder(path, requests, materialize=False, snapshot_interval=snapshot_interval)
    await holder.start()
    first, last = min(60.0, workload.seconds / 5), workload.seconds - min(75.0, workload.seconds / 5)

    async def loads() -> None:
        await asyncio.sleep(first)
        await holder.cold_load(f"after {first / 60:.1f} min")
        await asyncio.sleep(max(0.0, last - first))
        await holder.cold_load(f"after {last / 60:.1f} min")

    def background() -> list[asyncio.Task[Any]]:
        return [asyncio.create_task(holder.maintain_every(maintenance_s)), asyncio.create_task(loads())]

    elapsed = await _drive(holder, workload, requests, extra=background)
    await holder.stop()
    summary = _summarize("sustained", workload, holder, elapsed)
    minutes: dict[int, list[float]] = {}
    for due, latency in holder.run.latencies:
        minutes.setdefault(int(due // 60), []).append(latency)
    per_minute = [_ms(_p(values, 0.99)) for _, values in sorted(minutes.items())]
    live_files = len(holder.log.table().file_uris())
    return {**summary, "ack_p99_ms_first_min": per_minute[0], "ack_p99_ms_last_min": per_minute[-1],
            "ack_p99_ms_per_min": per_minute, "loads": holder.run.loads, "maintenance_runs": holder.run.maintenance,
            "maintenance": holder.run.maintenance_log, "live_log_files_at_end": live_files,
            "maintenance_took_s_max": max((m["took_s"] for m in holder.run.maintenance_log), default=0.0),
            "live_log_files_after_maintenance_max": max(
                (m["live_files"] for m in holder.run.maintenance_log), default=0),
            "snapshot_interval": snapshot_interval, "maintenance_errors": holder.run.maintenance_errors,
            "maintenance_unfinished_since_s": holder.run.maintenance_started,
            "maintenance_unfinished_step": holder.run.maintenance_step,
            "maintenance_step_s_max": {step: max((m["step_s"].get(step, 0.0) for m in holder.run.maintenance_log),
                                                 default=0.0) for step in STEPS}}


def main(full: bool) -> None:
    """Run the capacity and target-rate cases (and, with ``full``, the 30-minute sustained run)."""
    with tempfile.TemporaryDirectory(prefix="groupcoord-bench-") as tmp:
        root = Path(tmp)
        rate = Workload(committers=200, partitions_each=50, seconds=60 if full else 20, rate=TARGET_RATE)
        rows = [
            asyncio.run(_case(root / "capacity", "capacity (log only)", Workload(
                committers=200, partitions_each=50, seconds=30 if full else 10), materialize=False)),
            asyncio.run(_case(root / "rate-log", "at target rate (log only)", rate, materialize=False)),
            asyncio.run(_case(root / "rate", "at target rate (log + materializer)", rate, materialize=True)),
        ]
        sustained = asyncio.run(_sustained(root / "sustained", Workload(
            committers=200, partitions_each=50, seconds=1800, rate=TARGET_RATE))) if full else None
    table = [{k: v for k, v in row.items() if not isinstance(v, list | dict)}
             for row in [*rows, *([sustained] if sustained is not None else [])]]
    log_only, served = rows[1], rows[2]
    summary: dict[str, Any] = {
        "capacity_offsets_per_s": rows[0]["offsets_per_s"],
        "offsets_per_s_at_target": log_only["offsets_per_s"],
        "ack_p99_ms_at_target": log_only["ack_p99_ms"],
        "delta_commits_per_s_at_target": log_only["delta_commits_per_s"],
        "files_per_hour_at_target": log_only["files_per_hour"],
        "ack_p99_ms_at_target_with_materializer": served["ack_p99_ms"],
        "materializer_lag_p99_s_at_target": served["materializer_lag_p99_s"],
        "ack_breakdown_at_target": log_only["ack_breakdown"],
        "ack_breakdown_at_target_with_materializer": served["ack_breakdown"],
        "targets": {"offsets_per_s": ">= 100000", "ack_p99_ms": "< 100", "delta_commits_per_s": "<= 20",
                    "materializer_lag_s": "<= 1"},
    }
    if sustained is not None:
        summary["sustained"] = {k: sustained[k] for k in (
            "seconds", "offsets_per_s", "ack_p99_ms", "ack_p99_ms_first_min", "ack_p99_ms_last_min",
            "ack_p99_ms_per_min", "loads", "delta_commits_per_s", "files_per_hour", "maintenance_runs",
            "maintenance_took_s_max", "live_log_files_after_maintenance_max", "live_log_files_at_end",
            "maintenance_errors", "maintenance_unfinished_since_s", "maintenance_unfinished_step",
            "maintenance_step_s_max", "ack_breakdown")}
    write_result(
        "commit_throughput",
        title="Commit throughput (batcher -> Delta record log -> materialized state)",
        rows=table,
        summary=summary,
        notes="Default settings (no linger and no minimum commit interval: one commit in flight at a time, the writes "
        "arriving meanwhile forming the next; snapshot every 100,000 records, "
        "materializer flush every 250 ms); appends fsynced; local disk; 2 cores; each row records the 1-minute "
        "load average while it ran. Latency is from "
        "the moment a request was due (open loop) to its acknowledgement; loop_lag_p99_ms is how late the event "
        "loop woke from 10 ms sleeps (CPU starvation shows there first). files_per_hour counts the record "
        "log's data files created (one per commit) before compaction. The committers run in the coordinator's "
        "process and event loop (no sockets), so their scheduling competes with the acknowledgement path. "
        "ack_breakdown_* (summary) splits the latency of all requests and of the slowest 1 % into: waiting for "
        "the batch to close (a commit ahead, plus a late event "
        "loop), waiting for a snapshot's preparation, the commit (commit_rows: Arrow columns built; commit_write: "
        "Parquet file; commit_sync: fsyncs before the link; commit_link: link and log-directory fsync), the "
        "executor's return to the loop and the waiter's wake-up; *_share_in_snapshot_commits says how many of them "
        "were in a snapshot's commit. On this machine the commit phases' tails follow the CPU load (other "
        "engineers' Spark jobs), not the data: compare rows by their load_avg_1m.",
    )


def sustained_main(argv: list[str] | None = None) -> None:
    """``python -m bench.commit_throughput --sustained SECONDS [--snapshot-interval N] [--maintenance-s S]``: a
    shorter sustained run (printed, not recorded), e.g. with a low snapshot interval to reach the segment count of
    the 30-minute run sooner."""
    parser = argparse.ArgumentParser(prog="bench.commit_throughput")
    parser.add_argument("--sustained", type=float, required=True, metavar="SECONDS")
    parser.add_argument("--snapshot-interval", type=int, default=SNAPSHOT_INTERVAL)
    parser.add_argument("--maintenance-s", type=float, default=60.0)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="groupcoord-bench-") as tmp:
        result = asyncio.run(_sustained(Path(tmp) / "sustained", Workload(
            committers=200, partitions_each=50, seconds=args.sustained, rate=TARGET_RATE),
            maintenance_s=args.maintenance_s, snapshot_interval=args.snapshot_interval))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    sustained_main()
