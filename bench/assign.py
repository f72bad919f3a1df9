"""Assignor speed: groupcoord's DataFrame assignors side by side with kafka-python's, on the same inputs, same run.

Every member subscribes to every topic and nothing is owned (a fresh assignment). Our time runs from the input
DataFrames to the collected output (``toArrow()``) in a warm SparkSession (each assignor has run once at 100k x
1000 before the timed sizes, see :func:`_warm_up`, and each timed size is the second of two identical calls, see
:func:`_warm_timed_call`); the peer (kafka-python's
``RangePartitionAssignor``, ``RoundRobinPartitionAssignor``, ``StickyPartitionAssignor`` or
``CooperativeStickyAssignor``) runs in a subprocess with a real time cap and is reported as "> cap" when it hits it.
We also record the Spark jobs and stages of each call (``sc.statusTracker()``), the batch regime (many small groups in
one call) and the p50 of one small group (after every assignor's untimed warm-up rounds, see :func:`_small`).

The peer alone is also runnable: ``python -m bench.assign PEER PARTITIONS MEMBERS TOPICS`` prints its seconds.
Some cases alone, printed and not recorded: ``python -m bench.assign --case small,batch,1Mx2000 [--assignors
sticky,uniform] [--full]`` (cases: ``small``, ``batch``, ``10kx100``, ``100kx1000``, ``1Mx2000``, ``1Mx10k``;
``--full`` gives the peers full mode's caps).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections import namedtuple
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.results_io import write_result

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# Our assignor -> the kafka-python assignor it is compared with (uniform and weighted have no kafka-python twin; the
# sticky assignor is the closest: balance first, then stickiness).
PEERS: dict[str, str] = {
    "range": "range",
    "roundrobin": "roundrobin",
    "sticky": "sticky",
    "cooperative-sticky": "cooperative-sticky",
    "uniform": "sticky",
    "weighted": "sticky",
}
QUICK_SIZES = ((10_000, 100, 10), (100_000, 1000, 100))
FULL_SIZES = (*QUICK_SIZES, (1_000_000, 2000, 1000), (1_000_000, 10_000, 1000))
KEPT = ((1_000_000, 2000, 1000),)  # issue 4's 1M x 2000 target, run in quick mode too (sticky and uniform, no peer)
KEPT_ASSIGNORS = ("sticky", "uniform")
BATCH = (10_000, 10, 100)  # groups, members per group, partitions per group
SMALL = (10, 100, 4)  # members, partitions, topics
SMALL_WARM_ROUNDS = 25  # untimed rounds of every assignor on the small group, per block of the warm-up (see _small)
SMALL_WARM_MAX_ROUNDS = 100  # the warm-up stops here even if the JIT is still busy (small_group_warm_jit_share says)
JIT_SETTLED = 0.1  # warm once the JIT compiler threads use less CPU than this share of a warm-up block's wall time
WARM_UP = (100_000, 1000, 100)  # partitions, members, topics: each assignor runs once at this size, untimed
REFERENCE = (20_000, 200, 10)  # partitions, members, topics: the reference timing of kafka-python's sticky
REFERENCE_SECONDS = 10.5  # that timing on the machine the targets were set on


@dataclass(frozen=True, kw_only=True)
class Timed:
    """One timed call: seconds, output rows, Spark jobs and stages (stages of all its jobs, skipped ones included)."""

    seconds: float
    rows: int
    jobs: int
    stages: int


def _session() -> SparkSession:
    from groupcoord.spark.session import local_session

    return local_session(master="local[*]", app_name="groupcoord-bench-assign", shuffle_partitions=4,
                         extra={"spark.driver.memory": "6g"})


def _inputs(spark: SparkSession, *, groups: int, members: int, partitions: int, topics: int,
            batched: bool) -> tuple[DataFrame, DataFrame]:
    """Members and partitions of ``groups`` identical groups, generated in Spark (no driver-side rows)."""
    from pyspark.sql import functions as F

    per_topic = partitions // topics
    names = F.array(*[F.lit(f"t{t}") for t in range(topics)])
    member_rows = spark.range(groups * members).select(
        (F.col("id") / members).cast("long").alias("_gid"),
        F.concat(F.lit("member-"), (F.col("id") % members).cast("string")).alias("member_id"),
        F.lit(None).cast("string").alias("group_instance_id"),
        names.alias("topics"),
        F.lit(None).cast("string").alias("rack"),
    )
    partition_rows = spark.range(groups * partitions).select(
        (F.col("id") / partitions).cast("long").alias("_gid"),
        F.concat(F.lit("t"), ((F.col("id") % partitions) / per_topic).cast("long").cast("string")).alias("topic"),
        ((F.col("id") % partitions) % per_topic).cast("int").alias("partition"),
    )
    if batched:
        group = F.concat(F.lit("g"), F.col("_gid").cast("string")).alias("group_id")
        return member_rows.select(group, "*").drop("_gid"), partition_rows.select(group, "*").drop("_gid")
    return member_rows.drop("_gid"), partition_rows.drop("_gid")


def _timed_call(spark: SparkSession, name: str, members: DataFrame, partitions: DataFrame) -> Timed:
    from groupcoord.assignors import get_assignor
    from groupcoord.assignors.collect import to_arrow

    context = spark.sparkContext
    tag = f"bench-assign-{name}-{time.monotonic_ns()}"
    context.setJobGroup(tag, tag)
    started = time.perf_counter()
    table = to_arrow(get_assignor(name).assign(members, partitions))
    seconds = time.perf_counter() - started
    tracker = context.statusTracker()
    jobs = tracker.getJobIdsForGroup(tag)
    stages = 0
    for job in jobs:
        info = tracker.getJobInfo(job)
        stages += len(info.stageIds) if info is not None else 0
    context.setJobGroup("", "")
    return Timed(seconds=seconds, rows=table.num_rows, jobs=len(jobs), stages=stages)


def _peer_seconds(peer: str, partitions: int, members: int, topics: int, cap: float | None) -> float | None:
    """Run the kafka-python assignor in a subprocess; its seconds, or None when it hit ``cap``."""
    command = [sys.executable, "-m", "bench.assign", peer, str(partitions), str(members), str(topics)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=cap, check=True)
    except subprocess.TimeoutExpired:
        return None
    return float(done.stdout.strip().splitlines()[-1])


def _peer_main(peer: str, partitions: int, members: int, topics: int) -> None:
    """Time one kafka-python assignment (the subprocess side of :func:`_peer_seconds`)."""
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

    classes: dict[str, Any] = {
        "range": RangePartitionAssignor,
        "roundrobin": RoundRobinPartitionAssignor,
        "sticky": StickyPartitionAssignor,
        "cooperative-sticky": CooperativeStickyAssignor,
    }
    assignor = classes[peer]()
    names = [f"t{t}" for t in range(topics)]
    per_topic = set(range(partitions // topics))

    class Cluster:
        """The cluster-metadata calls the assignors make."""

        def topics(self) -> set[str]:
            return set(names)

        def partitions_for_topic(self, topic: str) -> set[int]:
            return per_topic

        def available_partitions_for_topic(self, topic: str) -> set[int]:
            return per_topic

    member = namedtuple("member", ["member_id", "group_instance_id", "metadata"])
    group = [member(f"member-{i}", None, assignor.metadata(names)) for i in range(members)]
    started = time.perf_counter()
    result = assignor.assign(Cluster(), group)
    seconds = time.perf_counter() - started
    assert len(result) == members
    print(f"{seconds:.3f}")


def _fmt(seconds: float | None, cap: float | None) -> str:
    """A peer's seconds: ``> cap`` when it was stopped, three decimals below 0.1 s (kafka-python's range and
    roundrobin take milliseconds at 10k partitions)."""
    if seconds is None:
        return f"> {cap:.0f}"
    return f"{seconds:.3f}" if seconds < 0.1 else f"{seconds:.2f}"


def _ratio(theirs: float, ours: float) -> str:
    """The peer's time over ours: two decimals below 1 (the peer is faster), one above."""
    ratio = theirs / ours
    return f"{ratio:.2f}" if ratio < 1 else f"{ratio:.1f}"


def _peer_cap(peer: str, partitions: int, members: int, *, full: bool) -> float | None:
    """120 s, except kafka-python's sticky at 100k x 1000 in full mode: uncapped, since the 50x target is against
    it (the issue quotes 513 s). Other peers stay capped in full mode too, so the run fits in about half an hour."""
    if full and peer == "sticky" and (partitions, members) == (100_000, 1000):
        return None
    return 120.0


def _size_label(partitions: int, members: int) -> str:
    """``1Mx2000``, ``100kx1000``: a size's name for ``--case``."""
    short = f"{partitions // 1_000_000}M" if partitions >= 1_000_000 else f"{partitions // 1000}k"
    return f"{short}x{members // 1000}k" if members >= 10_000 else f"{short}x{members}"


def _sizes(spark: SparkSession, full: bool, names: tuple[str, ...],
           sizes: tuple[tuple[int, int, int], ...] | None = None, *, with_peers: bool = True) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for partitions, members, topics in sizes if sizes is not None else FULL_SIZES if full else QUICK_SIZES:
        peers: dict[str, float | None] = {}
        m, p = _inputs(spark, groups=1, members=members, partitions=partitions, topics=topics, batched=False)
        for name in names:
            ours = _warm_timed_call(spark, name, m, p)
            assert ours.rows == partitions, f"{name}: {ours.rows} rows for {partitions} partitions"
            peer = PEERS[name]
            if not with_peers:
                rows.append({"case": f"{partitions:,} x {members:,}", "assignor": name,
                             "seconds": round(ours.seconds, 2), "jobs": ours.jobs, "stages": ours.stages,
                             "peer": "not run", "peer_seconds": "", "speedup": ""})
                print(rows[-1], flush=True)
                continue
            cap = _peer_cap(peer, partitions, members, full=full)
            if peer not in peers:
                peers[peer] = _peer_seconds(peer, partitions, members, topics, cap)
            theirs = peers[peer]
            ratio = (f"> {cap / ours.seconds:.1f}" if theirs is None and cap else
                     "" if theirs is None else _ratio(theirs, ours.seconds))
            rows.append({
                "case": f"{partitions:,} x {members:,}", "assignor": name, "seconds": round(ours.seconds, 2),
                "jobs": ours.jobs, "stages": ours.stages, "peer": f"kafka-python {peer}",
                "peer_seconds": _fmt(theirs, cap), "speedup": ratio,
            })
            print(rows[-1], flush=True)
    return rows


def _warm_up(spark: SparkSession, names: tuple[str, ...]) -> None:
    """Run each assignor once at :data:`WARM_UP`'s size, untimed, before the timed sizes and batch.

    A JVM's first large call of an assignor pays for the JIT compilation of its generated code and for growing the
    heap: 1M x 2000 sticky took 14.5 s as the JVM's first large call and 8.6 s as its second. A coordinator that
    has been serving is past that point, so the timed cases start from a warm JVM, as the issue asks.
    """
    partitions, members, topics = WARM_UP
    m, p = _inputs(spark, groups=1, members=members, partitions=partitions, topics=topics, batched=False)
    for name in names:
        warm = _timed_call(spark, name, m, p)
        print(f"warm-up {name}: {warm.seconds:.2f} s (not recorded)", flush=True)


def _warm_timed_call(spark: SparkSession, name: str, members: DataFrame, partitions: DataFrame) -> Timed:
    """The second of two identical calls: the first (untimed) compiles the JVM's code for this size.

    Measured on 2026-11-23: 1M x 2000 sticky took 4.9 s in a process that had run every assignor at 1M before it
    and 12.6 s in one that had run three 100k x 1000 warm-ups only; a coordinator that assigns groups of a size
    repeatedly is in the first state.
    """
    _timed_call(spark, name, members, partitions)
    return _timed_call(spark, name, members, partitions)


def _machine_factor() -> dict[str, Any]:
    """How much slower this machine is than the one the issue's targets were set on (above 1: slower).

    The issue quotes kafka-python's sticky assignor at 10.5 s for 20k partitions x 200 members on that machine; the
    same call here, in a subprocess of this run, gives the ratio. It turns a target in seconds into this machine's
    seconds without pretending the two machines are the same: the CPU behind this 2-core machine differs between
    sessions (the same code's 1M x 2000 sticky took 8.6 s on one and 17.6 s on another).
    """
    partitions, members, topics = REFERENCE
    seconds = _peer_seconds("sticky", partitions, members, topics, None)
    assert seconds is not None
    factor = seconds / REFERENCE_SECONDS
    print(f"reference: kafka-python sticky {partitions:,} x {members} took {seconds:.1f} s here "
          f"({REFERENCE_SECONDS} s on the issue's machine): machine factor {factor:.2f}", flush=True)
    return {"reference_peer_s": round(seconds, 2), "reference_peer_s_issue": REFERENCE_SECONDS,
            "machine_factor": round(factor, 2)}


def _batch(spark: SparkSession, names: tuple[str, ...]) -> list[dict[str, Any]]:
    groups, members, partitions = BATCH
    m, p = _inputs(spark, groups=groups, members=members, partitions=partitions, topics=1, batched=True)
    rows = []
    for name in names:
        ours = _warm_timed_call(spark, name, m, p)
        assert ours.rows == groups * partitions
        rows.append({
            "case": f"batch: {groups:,} groups x {members} x {partitions}", "assignor": name,
            "seconds": round(ours.seconds, 2), "jobs": ours.jobs, "stages": ours.stages, "peer": "",
            "peer_seconds": "", "speedup": "",
        })
        print(rows[-1], flush=True)
    return rows


def _small(spark: SparkSession, names: tuple[str, ...],
           repeats: int) -> tuple[list[dict[str, Any]], dict[str, float], dict[str, Any]]:
    """The p50 of one small group per assignor in a warm session, each assignor's first call (cold), and the warm-up.

    A small group's call is almost all Spark planning on the driver (analysis, optimisation, physical planning) and
    the JVM compiles that code over the first hundreds of calls: sticky alone on 2026-11-25 took 700 ms per call
    over its first 10 calls, then 420, 340, 320, and 250-290 ms after 100. A coordinator that has been serving is
    past that point, so every assignor first runs blocks of :data:`SMALL_WARM_ROUNDS` untimed rounds (interleaved
    with the others) until the JVM's JIT compiler threads used less CPU than :data:`JIT_SETTLED` of a block's wall
    time (:func:`_jit_cpu_seconds`), at most :data:`SMALL_WARM_MAX_ROUNDS` rounds. On 2026-11-27, at a load of
    7-13 on the 2 cores, the compiler threads took 52 % of the wall time over the first 25 rounds of all six
    assignors, 25 % over the next 25 (the rounds a fixed warm-up of 25 timed), 9 % after 75 and 5 % after 125.
    Then ``repeats`` timed rounds, again interleaved, so that a slow moment of the shared machine falls on all
    assignors alike. The first call of each (the process's first small call of that assignor) is returned too.
    """
    members, partitions, topics = SMALL
    m, p = _inputs(spark, groups=1, members=members, partitions=partitions, topics=topics, batched=False)
    first = {name: round(_timed_call(spark, name, m, p).seconds, 3) for name in names}
    jvm = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())  # type: ignore[union-attr]
    rounds, share = 0, 1.0
    while share >= JIT_SETTLED and rounds < SMALL_WARM_MAX_ROUNDS:
        started, compiled = time.perf_counter(), _jit_cpu_seconds(jvm)
        for _ in range(SMALL_WARM_ROUNDS):
            for name in names:
                _timed_call(spark, name, m, p)
        rounds += SMALL_WARM_ROUNDS
        share = (_jit_cpu_seconds(jvm) - compiled) / (time.perf_counter() - started)
        print(f"small: {rounds} warm-up rounds, JIT {share:.0%} of the last block's wall time", flush=True)
    calls: dict[str, list[Timed]] = {name: [] for name in names}
    for _ in range(repeats):
        for name in names:
            calls[name].append(_timed_call(spark, name, m, p))
    rows = []
    for name in names:
        rows.append({
            "case": f"small: {members} x {partitions} (p50 of {repeats})", "assignor": name,
            "seconds": round(statistics.median(c.seconds for c in calls[name]), 3), "jobs": calls[name][-1].jobs,
            "stages": calls[name][-1].stages, "peer": "", "peer_seconds": "", "speedup": "",
        })
        print(rows[-1], flush=True)
    print(f"small: first call of each assignor (cold JVM): {first}", flush=True)
    return rows, first, {"small_group_warm_rounds": rounds, "small_group_warm_jit_share": round(share, 3)}


def _jit_cpu_seconds(pid: int) -> float:
    """CPU seconds the JIT compiler threads (``C1/C2 CompilerThread``) of the JVM ``pid`` used so far, from /proc
    (0.0 where there is none: the warm-up is then one block)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            stat = (task / "stat").read_text()
        except OSError:  # the thread ended
            continue
        if "CompilerThre" in stat[stat.index("(") + 1:stat.rindex(")")]:
            fields = stat.rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def main(full: bool) -> None:
    """Run the small-group, size and batch cases and record them."""
    from groupcoord.assignors import ASSIGNOR_NAMES

    load_before = os.getloadavg()[0]
    machine = _machine_factor()
    spark = _session()
    names = tuple(ASSIGNOR_NAMES)
    small, first, warm = _small(spark, names, repeats=9)
    _warm_up(spark, names)
    sizes = _sizes(spark, full, names)
    if not full:  # issue 20 keeps issue 4's targets in the same (quick) run: 1M x 2000 sticky and uniform <= 10 s
        sizes += _sizes(spark, False, KEPT_ASSIGNORS, KEPT, with_peers=False)
    batch = _batch(spark, names if full else ("range", "sticky"))
    spark.stop()

    def seconds(case: str, name: str) -> Any:
        return next((r["seconds"] for r in sizes + batch if r["case"] == case and r["assignor"] == name), "not run")

    write_result(
        "assign",
        title="Assignors: DataFrame plans vs kafka-python, from input DataFrames to toArrow()",
        rows=small + sizes + batch,
        summary={
            **machine,
            "small_group_p50_s": {r["assignor"]: r["seconds"] for r in small},
            "small_group_first_call_s": first,
            **warm,
            "jobs_per_call": sorted({r["jobs"] for r in small + sizes + batch}),
            "sticky_100k_x_1000_s": seconds("100,000 x 1,000", "sticky"),
            "sticky_1M_x_2000_s": seconds("1,000,000 x 2,000", "sticky"),
            "uniform_1M_x_2000_s": seconds("1,000,000 x 2,000", "uniform"),
            "batch_10k_groups_sticky_s": seconds(f"batch: {BATCH[0]:,} groups x {BATCH[1]} x {BATCH[2]}", "sticky"),
            "targets": {
                "small_group_p50_s": "< 0.3",
                "sticky_coop_uniform_100k_x_1000": ">= 50x kafka-python sticky",
                "sticky_uniform_1M_x_2000_s": "<= 10",
                "every_assignor_1M_x_10k_s": "< 60",
                "batch_10k_groups_s": "< 10",
            },
        },
        notes="local[*] on the 2-core machine shared with other engineers' runs (1-minute load average "
        f"{load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end), so absolute times are above what an "
        "idle machine gives. machine_factor: kafka-python's sticky at 20k x 200 here, divided by the issue's 10.5 s "
        "for it (above 1: this machine is slower than the one the targets were set on). "
        f"Small group: blocks of {SMALL_WARM_ROUNDS} untimed rounds of every assignor first, until the JVM's JIT "
        f"compiler threads used less CPU than {JIT_SETTLED:.0%} of a block's wall time or {SMALL_WARM_MAX_ROUNDS} "
        "rounds ran (small_group_warm_rounds; small_group_warm_jit_share: the last block's share; the JIT "
        "compiles Spark's planner over the first hundreds of calls; small_group_first_call_s is each assignor's "
        "first call, cold), "
        "then the timed calls, interleaved across assignors. "
        "Warm JVM: each assignor ran once at 100k x 1000, untimed, before the timed sizes and the batch, and each "
        "timed size and batch is the second of two identical calls (the first untimed). "
        "Fresh assignment, every member subscribes to every topic. One Spark job per call; 'stages' counts every "
        "stage of the job (a map stage per input exchange, and the result stage). The peer runs in a subprocess; "
        "'> N' means it was stopped at the N-second cap. uniform and weighted are compared with kafka-python's "
        "sticky assignor (it has no twin for them).",
    )


def _cases_main(argv: list[str]) -> None:
    """Run only the named cases (``--case a,b``) and print their rows; ``--record`` also writes them as the
    ``assign_cases`` result (its own section of docs/benchmarks.md, beside the last complete run)."""
    import argparse

    from groupcoord.assignors import ASSIGNOR_NAMES

    by_label = {_size_label(p, m): (p, m, t) for p, m, t in FULL_SIZES}
    parser = argparse.ArgumentParser(prog="python -m bench.assign")
    parser.add_argument("--case", required=True, help=f"comma-separated: small, batch, {', '.join(by_label)}")
    parser.add_argument("--assignors", default=",".join(ASSIGNOR_NAMES))
    parser.add_argument("--full", action="store_true", help="full mode's peer caps")
    parser.add_argument("--no-peers", action="store_true", help="time our assignors only")
    parser.add_argument("--record", action="store_true", help="write bench/results/assign_cases.json")
    args = parser.parse_args(argv)
    cases = args.case.split(",")
    unknown = [c for c in cases if c not in {"small", "batch", *by_label}]
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}")
    names = tuple(args.assignors.split(","))
    load_before = os.getloadavg()[0]
    print(f"load average {load_before:.1f}", flush=True)
    machine = _machine_factor() if args.record else {}
    spark = _session()
    rows, first, warm = _small(spark, names, repeats=9) if "small" in cases else ([], {}, {})
    sizes = tuple(by_label[c] for c in cases if c in by_label)
    if sizes or "batch" in cases:
        _warm_up(spark, names)
    if sizes:
        rows += _sizes(spark, args.full, names, sizes, with_peers=not args.no_peers)
    if "batch" in cases:
        rows += _batch(spark, names)
    spark.stop()
    print(f"load average {os.getloadavg()[0]:.1f}", flush=True)
    if args.record:
        write_result(
            "assign_cases", title="Assignors: selected cases of bench/assign.py, current code", rows=rows,
            summary={"cases": cases, "assignors": list(names), **machine,
                     **({"small_group_first_call_s": first} if first else {}), **warm},
            notes=f"Same timing as the assign benchmark (input DataFrames to toArrow(), warm session: "
            "each assignor ran once at 100k x 1000, untimed, before the timed sizes and the batch, and each timed "
            "size and batch is the second of two identical calls); 1-minute "
            f"load average {load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end. 'not run' peers: "
            "only our assignors were timed for that size. machine_factor: kafka-python's sticky at 20k x 200 here, "
            "divided by the issue's 10.5 s for it (above 1: this machine is slower than the one the targets were "
            "set on).")


if __name__ == "__main__":
    if sys.argv[1].startswith("--"):
        _cases_main(sys.argv[1:])
    else:
        _peer_main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
