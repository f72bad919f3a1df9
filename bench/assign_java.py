"""groupcoord's assignors against Apache Kafka's own Java assignors, on the same inputs, one after the other.

The peers are Kafka's client-side ``RangeAssignor``, ``RoundRobinAssignor``, ``StickyAssignor`` and
``CooperativeStickyAssignor`` and KIP-848's server-side ``UniformAssignor``, in ``bench/java/AssignorHarness.java``
(compiled at first use against the jars in ``.venv/jars/kafka``; see :mod:`bench.assign_java_peer`).

Speed (result ``assign_java``): for each size and assignor, the Java side runs in a fresh JVM and groupcoord in a fresh
Python process with a fresh SparkSession (bench/assign.py's session: ``local[*]``, 6 GB driver). Cold is each
process's first call; warm is the median of the timed calls after the untimed warm-up calls. The sizes are
bench/assign.py's (partitions x members: every member subscribes to every topic, nothing owned) and its batch of
10,000 groups (one batched call for groupcoord; the harness loops over the groups). Range and roundrobin must give
exactly Java's rows; for the others the spread (max - min partitions per member) is compared. Like for like, the
``engine`` columns time the coordinator's driver engine alone on prebuilt inputs, as Java's ``assign()`` is timed
(:mod:`bench.assign_java_engine`); the Spark job stays as the whole-call figure.

Quality (result ``assign_java_rebalance``): a rebalance (members owned a balanced assignment, some left, more joined;
homogeneous and heterogeneous subscriptions), run until every partition is assigned (cooperative-sticky takes
several rounds), on each side; groupcoord must be at least as balanced and move at most as many owned partitions.

``python -m bench.assign_java [--full]`` runs it alone.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench.assign_java_cases import (
    Case,
    Generated,
    case_text,
    moves,
    owned_table,
    read_assignment,
    rebalance,
    same_rows,
    spreads,
)
from bench.assign_java_engine import run_engine
from bench.assign_java_peer import Measured, java_converged, ours_converged, run_java, run_ours
from bench.results_io import Check, write_result

ASSIGNORS: tuple[str, ...] = ("range", "roundrobin", "sticky", "cooperative-sticky", "uniform")
EXACT: frozenset[str] = frozenset({"range", "roundrobin"})
STICKY: tuple[str, ...] = ("sticky", "cooperative-sticky", "uniform")
KAFKA_VERSION = "4.4.0"


@dataclass(frozen=True)
class Size:
    """A timed case and how many calls each side makes after its first (cold) one."""

    label: str
    case: Generated
    java_warmup: int
    java_runs: int
    ours_warmup: int
    ours_runs: int
    heap: str = "2g"
    engine_warmup: int = 1
    engine_runs: int = 3
    """The driver engine's calls (:mod:`bench.assign_java_engine`): Python has no JIT to warm, so one untimed call
    after the cold one settles its caches."""
    whole_job: bool = True
    """Whether groupcoord's whole Spark job is timed too (a fresh Python process and SparkSession per assignor: most
    of this benchmark's time, so ``make bench`` keeps it for the smallest size and ``make bench-full`` for all)."""


_SMALL = Size("10,000 x 100", Generated(1, 100, 10_000, 10), 30, 9, 1, 3, engine_warmup=30, engine_runs=9)
_MEDIUM = Size("100,000 x 1,000", Generated(1, 1000, 100_000, 100), 10, 7, 1, 3)
_BATCH = Size("batch: 10,000 groups x 10 x 100", Generated(10_000, 10, 100, 1), 10, 7, 1, 3)
QUICK_SIZES = (_SMALL, replace(_MEDIUM, whole_job=False), replace(_BATCH, whole_job=False))
"""``make bench``: 49 of its 60 minutes went to this benchmark at load 10-20 when every size timed the whole Spark
job in 15 fresh processes; the like-for-like engine and Java columns stay for every size."""
FULL_SIZES = (
    _SMALL, _MEDIUM, _BATCH,
    Size("1,000,000 x 2,000", Generated(1, 2000, 1_000_000, 1000), 2, 3, 0, 3, heap="8g"),
    Size("1,000,000 x 10,000", Generated(1, 10_000, 1_000_000, 1000), 2, 3, 0, 3, heap="8g"),
)
TIMEOUT_S = 3600.0


def _ratio(ours: float | None, java: float | None) -> str:
    """groupcoord's time over Java's (above 1: groupcoord is slower)."""
    if ours is None or not java:
        return ""
    ratio = ours / java
    return f"{ratio:.2f}" if ratio < 10 else f"{ratio:,.0f}"


def _check(name: str, case: Case, ours: Measured, java: Measured) -> tuple[str, bool]:
    """Range and roundrobin: the same rows as Java's; the others: the spread, no wider than Java's."""
    assert ours.output is not None and java.output is not None
    mine, theirs = read_assignment(ours.output), read_assignment(java.output)
    if name in EXACT:
        same = same_rows(mine, theirs)
        return ("same rows as Java" if same else f"DIFFERENT rows ({mine.num_rows} vs {theirs.num_rows})"), same
    ours_spread, java_spread = max(spreads(case, mine).values()), max(spreads(case, theirs).values())
    return f"spread {ours_spread} (Java {java_spread})", ours_spread <= java_spread


def _seconds(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _speed(sizes: tuple[Size, ...], folder: Path) -> tuple[list[dict[str, Any]], bool]:
    """One row per size and assignor; whether every check passed."""
    rows: list[dict[str, Any]] = []
    passed = True
    for size in sizes:
        case_file = folder / "case.txt"
        case_file.write_text(case_text(size.case), encoding="utf-8")
        for name in ASSIGNORS:
            java = run_java(case_file, name, warmup=size.java_warmup, runs=size.java_runs,
                            output=folder / f"{name}-java.tsv", heap=size.heap, timeout=TIMEOUT_S)
            ours = run_ours(case_file, [name], warmup=size.ours_warmup, runs=size.ours_runs, output_dir=folder,
                            timeout=TIMEOUT_S)[name] if size.whole_job else None
            engine = run_engine(case_file, name, warmup=size.engine_warmup, runs=size.engine_runs,
                                output=folder / f"{name}-engine.tsv", timeout=TIMEOUT_S)
            check, ok = _check(name, size.case, ours, java) if ours is not None else ("", True)
            engine_check, engine_ok = _check(name, size.case, engine, java)
            passed = passed and ok and engine_ok
            ours_cold, ours_warm = (ours.cold_s, ours.warm_median_s) if ours is not None else (None, None)
            rows.append({
                "case": size.label, "assignor": name,
                "ours cold s": _seconds(ours_cold), "ours warm s": _seconds(ours_warm),
                "Java cold s": _seconds(java.cold_s), "Java warm s": _seconds(java.warm_median_s),
                "cold ours/Java": _ratio(ours_cold, java.cold_s),
                "warm ours/Java": _ratio(ours_warm, java.warm_median_s),
                "engine cold s": _seconds(engine.cold_s), "engine warm s": _seconds(engine.warm_median_s),
                "engine warm/Java": _ratio(engine.warm_median_s, java.warm_median_s),
                "ours peak MiB": round(ours.peak_rss_mib) if ours else None, "Java peak MiB": round(java.peak_rss_mib),
                "check": check, "engine check": engine_check, "engine ok": engine_ok,
            })
            print(rows[-1], flush=True)
            for output in (ours.output if ours else None, java.output, engine.output):
                if output is not None:
                    output.unlink(missing_ok=True)
    return rows, passed


def _rebalances(full: bool) -> list[tuple[str, Case]]:
    """The rebalances compared for quality: 10% of the members leave and 25% more join."""
    shapes = [(10_000, 100, 10)] + ([(100_000, 1000, 100)] if full else [])
    cases: list[tuple[str, Case]] = []
    for partitions, members, topics in shapes:
        for heterogeneous in (False, True):
            group = rebalance("g0", members=members, partitions=partitions, topics=topics, leaving_every=10,
                              joining=members // 4, heterogeneous=heterogeneous)
            kind = "heterogeneous" if heterogeneous else "homogeneous"
            cases.append((f"{partitions:,} x {members:,} {kind}: {members // 10} leave, {members // 4} join",
                          (group,)))
    return cases


def _quality(full: bool, folder: Path) -> tuple[list[dict[str, Any]], bool]:
    """One row per rebalance and sticky assignor; whether groupcoord was as balanced and as sticky everywhere."""
    from bench.assign import _session

    spark = _session()
    rows: list[dict[str, Any]] = []
    passed = True
    for label, case in _rebalances(full):
        assert not isinstance(case, Generated)
        previous = owned_table(case)
        for name in STICKY:
            theirs, java_rounds = java_converged(case, name, folder)
            mine, our_rounds = ours_converged(spark, case, name)
            ours_spread, java_spread = max(spreads(case, mine).values()), max(spreads(case, theirs).values())
            ours_moved, java_moved = sum(moves(previous, mine).values()), sum(moves(previous, theirs).values())
            ok = ours_spread <= java_spread and ours_moved <= java_moved
            passed = passed and ok
            rows.append({
                "rebalance": label, "assignor": name, "ours spread": ours_spread, "Java spread": java_spread,
                "ours moved": ours_moved, "Java moved": java_moved, "ours rounds": our_rounds,
                "Java rounds": java_rounds, "owned before": previous.num_rows,
                "verdict": "as good or better" if ok else "WORSE than Java",
            })
            print(rows[-1], flush=True)
    spark.stop()
    return rows, passed


def main(full: bool) -> None:
    """Run the speed and quality comparisons and record them."""
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="assign-java-") as scratch:
        speed, exact = _speed(FULL_SIZES if full else QUICK_SIZES, Path(scratch))
        quality, good = _quality(full, Path(scratch))
    load_after = os.getloadavg()[0]
    warm = [float(r["warm ours/Java"].replace(",", "")) for r in speed if r["warm ours/Java"]]
    engine = [float(r["engine warm/Java"].replace(",", "")) for r in speed if r["engine warm/Java"]]
    engine_checks = [Check("assign_java", f"engine_as_java[{r['assignor']}, {r['case']}]", "correctness",
                           r["engine ok"], "==", True) for r in speed]
    write_result(
        "assign_java",
        checks=engine_checks,
        title=f"Assignors: groupcoord vs Apache Kafka {KAFKA_VERSION}'s Java assignors, same inputs",
        rows=speed,
        summary={
            "checks_passed": exact,
            "warm_ratio_median": round(statistics.median(warm), 1) if warm else "",
            "engine_warm_ratio_median": round(statistics.median(engine), 1) if engine else "",
            "load_average": f"{load_before:.1f} at the start, {load_after:.1f} at the end",
        },
        notes=f"Kafka {KAFKA_VERSION}'s RangeAssignor, RoundRobinAssignor, StickyAssignor, CooperativeStickyAssignor "
        "(ConsumerPartitionAssignor on a Cluster and a GroupSubscription) and KIP-848's UniformAssignor (GroupSpec "
        "and SubscribedTopicDescriber) in bench/java/AssignorHarness.java, one fresh JVM per row; groupcoord in one "
        "fresh Python process and SparkSession per row (local[*], 6 GB driver), from the input DataFrames to "
        "toArrow(). Cold: the process's first call. Warm: the median of the timed calls after the warm-up calls "
        "(Java: 30/10/2 warm-up calls then 9/7/3 timed for 10k/100k-and-batch/1M; groupcoord: 1 warm-up then 3 "
        "timed, none at 1M). Ratios are groupcoord's seconds over Java's: above 1, groupcoord is slower. Peak MiB: "
        "resident memory at its peak, the JVM's (-Xmx2g, 8g at 1M) and, for groupcoord, the Python process's plus "
        "its Spark JVM's. check: range and roundrobin give exactly Java's rows (Kafka's member order: static "
        "members by instance id first, then member id); the others' spread (max - min partitions per member) is no "
        "wider than Java's. Case sizes: partitions x members, every member subscribes to every topic "
        "(bench/assign.py's inputs). kafka-python's assignors are the peer column of the assign section. "
        "Like for like (engine columns, bench/assign_java_engine.py): the same work as Java's assign() on prebuilt "
        "objects, i.e. the coordinator's driver engine from prebuilt Member and Partition values to its answer, in "
        "a fresh Python process (no Spark), a batch looping over its groups as the harness does; warm-up 30 calls "
        "then 9 timed at 10k, 1 then 3 elsewhere (no JIT to settle); 'engine check' as 'check'. The ours columns "
        "are the whole Spark job (DataFrames in, toArrow() out), kept as the figure a DataFrame caller meets: "
        "make bench times it at 10,000 x 100 only (15 fresh Spark processes were most of make bench's hour), make "
        "bench-full at every size.",
    )
    write_result(
        "assign_java_rebalance",
        title="Assignors on a rebalance: balance and stickiness against Apache Kafka's Java assignors",
        rows=quality,
        summary={"as_good_or_better_everywhere": good},
        notes="Each member owned a round-robin deal of its topics' partitions (generation 1); every 10th member "
        "left (its partitions are not owned any more) and a quarter more joined. Heterogeneous: member i skips "
        "topic j when (i + j) % 3 == 0. Each side runs rounds, each owning the previous round's output at the next "
        "generation, until every partition is assigned (cooperative-sticky revokes before it reassigns). spread: "
        "max - min partitions per member; moved: owned partitions that end with another member; rounds: rounds to "
        "a complete assignment.",
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench.assign_java")
    parser.add_argument("--full", action="store_true", help="also the 1M-partition sizes and a larger rebalance")
    main(full=parser.parse_args().full)
