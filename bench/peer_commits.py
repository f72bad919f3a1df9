"""Offset commits against Kafka's own group coordinator: the same committers, at the same offered load, on both.

Sides: a dev broker (Apache Kafka 4.4.0: commits go to ``__consumer_offsets``) and ``groupcoord serve --no-spark``
(commits go to its Delta record log), each started fresh, one after the other. Committers: asyncio clients in the
benchmark process, one connection and one group each, committing ``partitions_each`` partitions of topic
:data:`TOPIC` per OffsetCommit v8 request outside any generation (generation -1, no member id: the commits of a
consumer with manually assigned partitions, which both coordinators accept for an empty group). The frames are
encoded up front (a few offset values per committer, cycled), so the client's work per request is a write and a
decode of the answer, the same on both sides.

Cases, per side:

- ``first commit`` (cold): the first OffsetCommit the fresh coordinator process answers, alone.
- ``capacity`` (closed loop): each committer sends its next request when the previous one is answered.
- ``offered N/s`` (open loop): each committer's requests fall due every ``committers * partitions_each / N``
  seconds whatever the latency; latency runs from the moment a request was due (a committer has one request in
  flight at a time, so a slow answer delays the next ones and shows in their latency). Warm: the first case ran.
  Requests are offered for the window only, then answers are awaited for at most :data:`DRAIN_S`: a side that falls
  behind would otherwise take minutes to work off its queue. ``offsets_per_s`` is then the sustained rate (offsets
  acknowledged within the offering window, over the window), ``unacknowledged`` counts the requests still
  unanswered at the end of the drain (abandoned), and the latency percentiles count each of those as the time from
  its due moment to the end of the drain, a lower bound of its latency (``ack_latency_lower_bound`` says when it
  applies).

200 committers x 50 partitions, 100,000 offsets/s offered (the target of bench/commit_throughput.py); each case
runs :data:`WARMUP_S` unmeasured, then 30 s measured (``--full``: 60 s), in steady state. Each side runs
:data:`~bench.peer_targets.REPETITIONS` times, alternated with the other, each time a fresh process, at each of the
two :data:`DURABILITY` levels (acknowledged from the page cache, or once flushed). Command:
``python -m bench.run peer_commits`` (or ``--full``).

For A/B comparisons of serve's own code there is a serve-only figure, its CPU per committed offset under the closed
loop of the capacity case (fresh serve processes, alternated by the caller between code versions):
``python -m bench.peer_commits --serve-cpu SECONDS [--rate N] [--serve-pythonpath DIR]`` prints one JSON line per
run. With ``--rate`` the committers offer N offsets/s (the open loop of the ``offered`` case) instead: the same work
per second on both sides of an A/B, so that serve's costs per second (timers, the materializer's flushes, the
lease) weigh the same on both, whatever their capacity on a loaded machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kafka.protocol.consumer import OffsetCommitRequest

from bench.loadgen import CLIENT_ID, Connection, cpu_seconds, p99_or_none, percentile, read_payload
from bench.peer_targets import (
    GROUPCOORD,
    KAFKA,
    RATIO_MEANING,
    REPETITIONS,
    Endpoint,
    alternated,
    coordinator_with_topic,
    load_average,
    medians,
    side_by_side,
)
from bench.results_io import Check, write_result

TOPIC = "commits"
OFFSET_VARIANTS = 4
FIGURES = ("offsets_per_s", "ack_p50_ms", "ack_p99_ms", "ack_max_ms")
DURABILITY: dict[str, dict[str, dict[str, Any]]] = {
    "page cache": {KAFKA: {}, GROUPCOORD: {"spark.groupcoord.log.fsync": "false"}},
    "fsync": {KAFKA: {"log.flush.interval.messages": 1}, GROUPCOORD: {}},
}
"""The two durability levels compared like for like: each side's settings (the broker's properties, serve's conf)."""
WARMUP_S = 5.0
"""Each load runs this long, unmeasured, before its measured window."""
TARGET_RATE = 100_000
"""Offered offsets/s: the target of bench/commit_throughput.py."""
DRAIN_S = 10.0
"""After an open-loop window, how long answers are awaited before the rest are abandoned (100x the p99 goal)."""
CAPACITY_GOAL, CAPACITY_FLOOR = 0.5, 0.3
"""Issue 29: serve's commit capacity over Kafka's coordinator's with the same committers (goal, and floor)."""
ACK_P99_GOAL_MS = 100.0
"""Issue 29: serve's acknowledgement p99 at the offered 100,000 offsets/s."""


@dataclass(frozen=True)
class Load:
    """``committers`` clients committing ``partitions_each`` offsets per request, for ``seconds``; ``rate``
    offsets/s in total (open loop) or None (closed loop)."""

    committers: int
    partitions_each: int
    seconds: float
    rate: float | None = None

    @property
    def name(self) -> str:
        """The case's label."""
        return "capacity" if self.rate is None else f"offered {self.rate:,.0f}/s"


def commit_frame(group: str, partitions: int, offset: int, correlation_id: int) -> tuple[bytes, Any]:
    """One encoded OffsetCommit v8 outside any generation, and the class that decodes its answer."""
    partition = OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition
    request = OffsetCommitRequest(
        version=8, group_id=group, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
        topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name=TOPIC, partitions=[
            partition(partition_index=p, committed_offset=offset, committed_leader_epoch=-1, committed_metadata="")
            for p in range(partitions)])])
    request.with_header(correlation_id=correlation_id, client_id=CLIENT_ID)
    return bytes(request.encode(header=True, framed=True)), request.header.get_response_class()


@dataclass
class Committer:
    """One client: its connection, its prebuilt frames, and the latencies and errors it saw."""

    connection: Connection
    frames: list[bytes]
    response_class: Any
    partitions: int
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    offsets: int = 0
    offsets_in_window: int = 0
    """Offsets acknowledged before :attr:`window_end` (the open-loop offering window's end)."""
    window_end: float = float("inf")
    unacknowledged: list[float] = field(default_factory=list)
    """The due moments of requests abandoned unanswered at the end of a drain."""
    _next: int = 0
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @classmethod
    async def open(cls, endpoint: Endpoint, index: int, partitions: int) -> Committer:
        """Connect, and encode this committer's frames (group ``commits-<index>``)."""
        built = [commit_frame(f"commits-{index}", partitions, offset, index) for offset in range(OFFSET_VARIANTS)]
        return cls(await Connection.open(endpoint.host, endpoint.port), [frame for frame, _ in built], built[0][1],
                   partitions)

    async def commit(self, due: float) -> None:
        """Send the next frame once the previous answer is in; record the latency from ``due`` (or, when cancelled
        unanswered, ``due`` in :attr:`unacknowledged`)."""
        try:
            async with self._lock:
                frame = self.frames[self._next % len(self.frames)]
                self._next += 1
                self.connection.writer.write(frame)
                await self.connection.writer.drain()
                payload = await read_payload(self.connection.reader)
        except asyncio.CancelledError:
            self.unacknowledged.append(due)
            raise
        answered = time.monotonic()
        self.latencies.append(answered - due)
        response = self.response_class.decode(payload, header=True)
        failed = sum(1 for topic in response.topics for p in topic.partitions if p.error_code)
        self.errors += failed
        self.offsets += self.partitions - failed
        if answered <= self.window_end:
            self.offsets_in_window += self.partitions - failed

    def reset(self, window_end: float = float("inf")) -> None:
        """Forget what was measured; count offsets acknowledged by ``window_end`` as in the window."""
        self.latencies, self.errors, self.offsets, self.offsets_in_window = [], 0, 0, 0
        self.unacknowledged, self.window_end = [], window_end


async def _drive(committers: list[Committer], load: Load) -> float:
    """Run ``load``; returns the elapsed seconds (the offering window, for an open loop, whose requests still
    unanswered :data:`DRAIN_S` after it are abandoned: see the module)."""
    start = time.monotonic()
    end = start + load.seconds
    for committer in committers:
        committer.window_end = end
    pending: set[asyncio.Task[None]] = set()

    async def closed(committer: Committer) -> None:
        while time.monotonic() < end:
            await committer.commit(time.monotonic())

    async def opened(committer: Committer, period: float) -> None:
        due = start + random.uniform(0, period)
        while due < end:
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            task = asyncio.create_task(committer.commit(due))
            pending.add(task)
            task.add_done_callback(pending.discard)
            due += period

    if load.rate is None:
        await asyncio.gather(*(closed(c) for c in committers))
    else:
        period = load.committers * load.partitions_each / load.rate
        await asyncio.gather(*(opened(c, period) for c in committers))
        elapsed = time.monotonic() - start
        if pending:
            _, unanswered = await asyncio.wait(set(pending), timeout=DRAIN_S)
            for task in unanswered:
                task.cancel()
            await asyncio.gather(*unanswered, return_exceptions=True)
        return elapsed
    return time.monotonic() - start


async def _reconnect(committers: list[Committer], endpoint: Endpoint) -> None:
    """New connections for committers that abandoned requests (their old streams may still carry answers)."""
    for committer in committers:
        if committer.unacknowledged:
            await committer.connection.close()
            committer.connection = await Connection.open(endpoint.host, endpoint.port)


def _row(side: str, case: str, load: Load | None, committers: list[Committer], elapsed: float,
         cpu_s: float, coordinator_cpu_s: float, drained_at: float | None = None) -> dict[str, Any]:
    abandoned = [due for c in committers for due in c.unacknowledged]
    latencies = [latency for c in committers for latency in c.latencies]
    latencies += [drained_at - due for due in abandoned] if drained_at is not None else []
    open_loop = load is not None and load.rate is not None
    offsets = sum(c.offsets_in_window if open_loop else c.offsets for c in committers)
    return {"side": side, "case": case, "requests": len(latencies), "unacknowledged": len(abandoned),
            "ack_latency_lower_bound": bool(abandoned),
            "offered_offsets_per_s": None if load is None or load.rate is None else load.rate,
            "offsets_per_s": round(offsets / elapsed) if load is not None else None,
            "ack_p50_ms": percentile(latencies, 0.5), "ack_p99_ms": p99_or_none(latencies),
            "ack_max_ms": percentile(latencies, 1.0), "errors": sum(c.errors for c in committers),
            "client_cpu_share": round(cpu_s / elapsed, 2),
            "coordinator_cpu_share": round(coordinator_cpu_s / elapsed, 2), "load_avg_1m": load_average()}


async def measure_side(endpoint: Endpoint, loads: list[Load]) -> list[dict[str, Any]]:
    """The cold first commit, then each load in turn, against one fresh coordinator."""
    committers = [await Committer.open(endpoint, i, loads[0].partitions_each) for i in range(loads[0].committers)]
    try:
        started, cpu, served = time.monotonic(), cpu_seconds(), endpoint.cpu_seconds()
        await committers[0].commit(time.monotonic())
        rows = [_row(endpoint.side, "first commit (cold)", None, committers[:1], time.monotonic() - started,
                     cpu_seconds() - cpu, endpoint.cpu_seconds() - served)]
        for load in loads:
            await _drive(committers, replace(load, seconds=WARMUP_S))  # to steady state: not measured
            await _reconnect(committers, endpoint)
            for committer in committers:
                committer.reset()
            cpu, served = cpu_seconds(), endpoint.cpu_seconds()
            elapsed = await _drive(committers, load)
            rows.append(_row(endpoint.side, load.name, load, committers, elapsed, cpu_seconds() - cpu,
                             endpoint.cpu_seconds() - served, drained_at=time.monotonic()))
            await _reconnect(committers, endpoint)
            print(rows[-1], flush=True)
    finally:
        for committer in committers:
            await committer.connection.close()
    return rows


def goal_checks(table: list[dict[str, Any]]) -> list[Check]:
    """Issue 29's goals at each durability: capacity at least :data:`CAPACITY_GOAL` of Kafka's (floor
    :data:`CAPACITY_FLOOR`), and at the offered 100,000/s an ack p99 under :data:`ACK_P99_GOAL_MS`."""
    checks = []
    for row in table:
        where = f"[{row['durability']}]"
        if row["case"] == "capacity":
            checks += [Check("peer_commits", f"offsets_per_s_ratio{where}", "speed", row["offsets_per_s_ratio"], ">=",
                             CAPACITY_GOAL),
                       Check("peer_commits", f"offsets_per_s_ratio_floor{where}", "speed", row["offsets_per_s_ratio"],
                             ">=", CAPACITY_FLOOR)]
        elif row["case"].startswith("offered"):
            checks.append(Check("peer_commits", f"groupcoord_ack_p99_ms{where}", "speed",
                                row["groupcoord_ack_p99_ms"], "<", ACK_P99_GOAL_MS))
    return checks


def main(full: bool, runs: int = REPETITIONS) -> None:
    """Kafka's coordinator and groupcoord's at the same loads, ``runs`` times each, alternated; writes
    ``bench/results/peer_commits.json`` (each figure's median over the runs, and its spread)."""
    committers, partitions_each = 200, 50
    loads = [Load(committers, partitions_each, 60 if full else 30),
             Load(committers, partitions_each, 60 if full else 30, rate=TARGET_RATE)]

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="peer-commits-") as work:
        for durability, settings in DURABILITY.items():
            for run, side in alternated(runs):
                where = Path(work) / f"{durability}-{side}-{run}"
                with coordinator_with_topic(side, where, settings[side], TOPIC, partitions_each) as endpoint:
                    rows += [{"durability": durability, **row} for row in asyncio.run(measure_side(endpoint, loads))]
    key = ("durability", "case")
    table = side_by_side(medians(rows, key, FIGURES, totals=("requests", "errors", "unacknowledged")), key, FIGURES,
                         extras=("repetitions", *(f"{f}_spread" for f in FIGURES), "requests", "errors",
                                 "unacknowledged", "ack_latency_lower_bound",
                                 "coordinator_cpu_share", "client_cpu_share", "load_avg_1m"))
    write_result(
        "peer_commits",
        title="Offset commits: groupcoord serve vs Kafka 4.4.0's group coordinator (same committers, same load)",
        rows=table,
        checks=goal_checks(table),
        summary={"ratio": RATIO_MEANING, "committers": committers, "partitions_per_commit": partitions_each,
                 "offered_offsets_per_s": loads[1].rate},
        notes=(f"Both coordinators started fresh {runs} times per durability in this run, the order swapped every "
               "run (Kafka first in the first), each alone on the machine; figures are medians over the runs, their "
               "spread beside them; the broker's JVM as kafka-server-start.sh starts it (1 GB heap, G1). Durability "
               "'page cache': both acknowledge before the commit reaches the disk (Kafka's default: appended to "
               "__consumer_offsets, no flush; groupcoord with spark.groupcoord.log.fsync=false). 'fsync': both "
               "acknowledge a flushed commit (Kafka with log.flush.interval.messages=1, which reaches "
               "__consumer_offsets; groupcoord's default). The committers run in the benchmark process "
               "(client_cpu_share: its CPU seconds per second), so on 2 cores they compete with the coordinator "
               "(coordinator_cpu_share: the broker's JVM, or the serve process). "
               "ack_p99_ms only from at least 100 requests. Open loop: requests are offered for the window, then "
               f"answers awaited for at most {DRAIN_S:.0f} s; offsets_per_s is the rate acknowledged within the "
               "window (sustained), unacknowledged the requests abandoned at the end of the drain, and where there "
               "are any (ack_latency_lower_bound) each counts in the percentiles as its due-to-drain-end time, so "
               "the percentiles are lower bounds."),
    )


async def _serve_cpu(endpoint: Endpoint, load: Load) -> dict[str, Any]:
    """Serve's CPU per committed offset under the closed-loop ``load`` (after :data:`WARMUP_S` of it unmeasured)."""
    committers = [await Committer.open(endpoint, i, load.partitions_each) for i in range(load.committers)]
    try:
        await _drive(committers, replace(load, seconds=WARMUP_S))
        await _reconnect(committers, endpoint)
        for committer in committers:
            committer.reset()
        served = endpoint.cpu_seconds()
        elapsed = await _drive(committers, load)
        cpu = endpoint.cpu_seconds() - served
    finally:
        for committer in committers:
            await committer.connection.close()
    offsets = sum(c.offsets for c in committers)
    return {"serve_us_per_offset": round(cpu / offsets * 1e6, 2) if offsets else None,
            "offsets_per_s": round(offsets / elapsed), "coordinator_cpu_share": round(cpu / elapsed, 3),
            "errors": sum(c.errors for c in committers),
            "unacknowledged": sum(len(c.unacknowledged) for c in committers), "load_avg_1m": load_average()}


def serve_cpu_per_offset(seconds: float, durability: str = "page cache", *, rate: float | None = None,
                         serve_pythonpath: str | None = None) -> dict[str, Any]:
    """One fresh ``serve`` with the capacity case's committers for ``seconds`` (offering ``rate`` offsets/s, or in a
    closed loop): its CPU microseconds per committed offset, at ``durability``; ``serve_pythonpath`` runs serve from
    another source tree (the A side of an A/B)."""
    if serve_pythonpath is not None:
        os.environ["PYTHONPATH"] = serve_pythonpath  # read by the serve subprocess only: this one has imported
    with tempfile.TemporaryDirectory(prefix="serve-cpu-") as work, coordinator_with_topic(
            GROUPCOORD, Path(work), DURABILITY[durability][GROUPCOORD], TOPIC, 50) as endpoint:
        row = asyncio.run(_serve_cpu(endpoint, Load(200, 50, seconds, rate)))
    return {"durability": durability, "offered_offsets_per_s": rate, "serve_pythonpath": serve_pythonpath, **row}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="bench.peer_commits", description="serve's CPU per committed offset")
    parser.add_argument("--serve-cpu", type=float, required=True, metavar="SECONDS", help="measured seconds")
    parser.add_argument("--rate", type=float, help="offered offsets/s (default: a closed loop)")
    parser.add_argument("--durability", choices=sorted(DURABILITY), default="page cache")
    parser.add_argument("--serve-pythonpath", help="run serve from this source tree (default: this one)")
    args = parser.parse_args()
    print(json.dumps(serve_cpu_per_offset(args.serve_cpu, args.durability, rate=args.rate,
                                          serve_pythonpath=args.serve_pythonpath)))
