"""Commit throughput through the batcher into the Delta record log, and load time after a long history.

Throughput: many concurrent committers (each a consumer committing offsets of its partitions in one request) await
``CommitBatcher.append``; we count partition offsets made durable per second, the p99 acknowledgement latency,
Delta commits per second and data files per hour (one file per commit before compaction).

Load time: a log holding N offset commits over 10,000 partitions and 1,000 groups, written in batches of 5,000 with
a snapshot every ``log.snapshot.interval`` (100,000) tail records, then loaded by a fresh ``DeltaRecordLog``.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from bench.results_io import write_result
from groupcoord.coordinator.encoded import EncodedRecord
from groupcoord.log.batcher import BatcherConfig, CommitBatcher
from groupcoord.log.delta import DeltaRecordLog

GROUPS = 1000
PARTITIONS = 10_000


def _offset(group: int, partition: int, value: int) -> EncodedRecord:
    return EncodedRecord("offset_commit", f"g{group}/events/{partition}", b'{"offset": %d, "metadata": ""}' % value)


async def _throughput(path: Path, *, committers: int, partitions_each: int, seconds: float) -> dict[str, float]:
    log = DeltaRecordLog(path)
    version = log.takeover(1, expected_version=-1)
    batcher = CommitBatcher(log, version=version, config=BatcherConfig())
    latencies: list[float] = []
    deadline = time.monotonic() + seconds

    async def committer(member: int) -> int:
        done, n = 0, 0
        while time.monotonic() < deadline:
            n += 1
            records = [_offset(member % GROUPS, (member * partitions_each + p) % PARTITIONS, n)
                       for p in range(partitions_each)]
            started = time.monotonic()
            await batcher.append(records)
            latencies.append(time.monotonic() - started)
            done += partitions_each
        return done

    started = time.monotonic()
    counts = await asyncio.gather(*(committer(m) for m in range(committers)))
    elapsed = time.monotonic() - started
    await batcher.close()
    latencies.sort()
    return {
        "committers": committers,
        "partitions_per_commit": partitions_each,
        "seconds": round(elapsed, 1),
        "offsets_per_s": round(sum(counts) / elapsed),
        "ack_p50_ms": round(statistics.median(latencies) * 1000, 1),
        "ack_p99_ms": round(latencies[int(len(latencies) * 0.99)] * 1000, 1),
        "delta_commits_per_s": round(batcher.commits / elapsed, 1),
        "files_per_hour": round(batcher.commits / elapsed * 3600),
    }


def _load_time(path: Path, *, commits: int, batch: int = 5000, snapshot_interval: int = 100_000) -> dict[str, float]:
    log = DeltaRecordLog(path)
    version = log.takeover(1, expected_version=-1)
    latest: dict[str, EncodedRecord] = {}
    tail = 0
    write_started = time.monotonic()
    for start in range(0, commits, batch):
        records = [_offset(i % GROUPS, (i * 7919) % PARTITIONS, i) for i in range(start, min(start + batch, commits))]
        version = log.append(records, expected_version=version)
        latest.update((r.key, r) for r in records)
        tail += len(records)
        if tail >= snapshot_interval:
            version = log.write_snapshot(list(latest.values()), expected_version=version)
            tail = 0
    write_s = time.monotonic() - write_started
    started = time.monotonic()
    loaded = DeltaRecordLog(path).load()
    load_s = time.monotonic() - started
    return {
        "offset_commits": commits,
        "distinct_keys": len(latest),
        "log_version": loaded.version,
        "records_loaded": len(loaded.records),
        "write_s": round(write_s, 1),
        "load_s": round(load_s, 2),
    }


def main(full: bool) -> None:
    """Run the throughput and load-time cases and record them."""
    with tempfile.TemporaryDirectory(prefix="groupcoord-bench-") as tmp:
        root = Path(tmp)
        cases = [(200, 50)] if not full else [(200, 50), (1000, 100)]
        rows = [
            asyncio.run(_throughput(root / f"log-{c}-{p}", committers=c, partitions_each=p,
                                    seconds=60 if full else 10))
            for c, p in cases
        ]
        load = _load_time(root / "load", commits=1_000_000)
    best = max(rows, key=lambda r: r["offsets_per_s"])
    write_result(
        "commit_throughput",
        title="Commit throughput (batcher -> Delta record log) and load time",
        rows=[{**row, "load_s": "", "offset_commits": ""} for row in rows]
        + [{"committers": "", "partitions_per_commit": "", "seconds": "", "offsets_per_s": "",
            "ack_p50_ms": "", "ack_p99_ms": "", "delta_commits_per_s": "", "files_per_hour": "",
            "load_s": load["load_s"], "offset_commits": load["offset_commits"]}],
        summary={
            "offsets_per_s": best["offsets_per_s"],
            "ack_p99_ms": best["ack_p99_ms"],
            "delta_commits_per_s": best["delta_commits_per_s"],
            "files_per_hour": best["files_per_hour"],
            "load": load,
            "targets": {"offsets_per_s": ">= 100000", "ack_p99_ms": "< 100", "delta_commits_per_s": "<= 20",
                        "load_s_after_1M_commits": "< 5"},
        },
        notes="Default batcher settings (linger 5 ms, min commit interval 50 ms); local disk; 2 shared cores. "
        "The load case writes a snapshot of every distinct key each 100,000 tail records, so a load reads one "
        "snapshot (up to all distinct keys) plus < 100,000 tail records.",
    )
