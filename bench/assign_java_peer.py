"""Both sides of the comparison with Kafka's Java assignors, each in a fresh process of its own.

- :func:`harness_classes` compiles ``bench/java/AssignorHarness.java`` against Kafka's jars (``.venv/jars/kafka``,
  never Spark's) into ``var/bench-java/<hash of the source>``, once per version of the source.
- :func:`run_java` runs the harness in a fresh JVM on a case file (:mod:`bench.assign_java_cases`).
- :func:`run_ours` runs groupcoord's assignor on the same case in a fresh Python process with a fresh SparkSession
  (``python -m bench.assign_java_peer``), so that its first call is as cold as the JVM's.
- :func:`java_converged` and :func:`ours_converged` (in a running SparkSession) run the rounds of a rebalance until
  every partition is assigned (:func:`converge`), for the quality checks.

Both time the assignment only: the inputs are built before the timer starts (Java objects; Spark DataFrames, lazy),
and groupcoord's time runs to the collected output (``toArrow()``).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from bench.assign_java_cases import (
    Case,
    Generated,
    assignable,
    case_frames,
    case_text,
    read_assignment,
    read_case,
    with_owned,
    write_assignment,
)
from groupcoord.config.jars import kafka_classpath
from groupcoord.devbroker.java_build import compiled_classes, java_tool

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO / "bench" / "java" / "AssignorHarness.java"
BUILD = REPO / "var" / "bench-java"
RESULT_PREFIX = "assign-java-result "
"""Marks the one stdout line per assignor of :func:`run_ours`'s subprocess (Spark may print on stdout too)."""
MAX_ROUNDS = 5
"""Rounds :func:`converge` tries before it gives up on a rebalance completing."""


@dataclass(frozen=True)
class Measured:
    """One side's figures for one assignor on one case: the process's first call, the warm calls, peak memory."""

    cold_s: float
    warm_s: tuple[float, ...]
    peak_rss_mib: float
    """Peak resident memory: the JVM's; for groupcoord, the Python process's plus its Spark JVM's."""
    output: Path | None = None
    """The last round's assignment of the first call, when one was asked for."""

    @property
    def warm_median_s(self) -> float | None:
        """The median of the warm calls (None when none ran)."""
        return statistics.median(self.warm_s) if self.warm_s else None

    @classmethod
    def from_json(cls, line: str, output: Path | None) -> Measured:
        """Parse one result line of the harness or of :func:`run_ours`'s subprocess."""
        data = json.loads(line)
        return cls(float(data["cold_s"]), tuple(float(s) for s in data["warm_s"]), float(data["peak_rss_mib"]),
                   output)


def harness_classes() -> Path:
    """The folder holding the compiled harness (compiled once per version of the source, see
    :func:`groupcoord.devbroker.java_build.compiled_classes`)."""
    return compiled_classes(SOURCE, BUILD)


def run_command(command: list[str], timeout: float | None) -> str:
    """Run ``command`` from the repository's root; its stdout, or an error carrying the end of its stderr."""
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=REPO)
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-25:])
        raise RuntimeError(f"{' '.join(command[:6])} ... exited with {done.returncode}:\n{tail}")
    return done.stdout


def run_java(case_file: Path, assignor: str, *, warmup: int, runs: int, output: Path | None = None,
             heap: str = "2g", timeout: float | None = None) -> Measured:
    """Kafka's ``assignor`` on ``case_file`` in a fresh JVM: the first call (its assignment written to ``output``),
    then ``warmup`` untimed calls and ``runs`` timed ones."""
    command = [java_tool("java"), f"-Xmx{heap}", "-cp", f"{harness_classes()}{os.pathsep}{kafka_classpath()}",
               "AssignorHarness", str(case_file), assignor, str(warmup), str(runs), str(output) if output else "-"]
    return Measured.from_json(run_command(command, timeout).strip().splitlines()[-1], output)


def converge(assign: Callable[[Case], pa.Table], case: Case, limit: int = MAX_ROUNDS) -> tuple[pa.Table, int]:
    """Rounds of ``assign`` until every assignable partition is assigned, each round owning the previous one's
    output at the next generation (cooperative-sticky leaves the partitions that change owner out of a round until
    their owner has revoked them): the last round's assignment and the number of rounds."""
    table = assign(case)
    rounds = 1
    while table.num_rows < assignable(case) and rounds < limit:
        assert not isinstance(case, Generated), "a generated case owns nothing: one round assigns everything"
        case = with_owned(case, table)
        table = assign(case)
        rounds += 1
    return table, rounds


def java_converged(case: Case, assignor: str, folder: Path, limit: int = MAX_ROUNDS) -> tuple[pa.Table, int]:
    """:func:`converge` with Kafka's ``assignor``, one fresh JVM per round, its files in ``folder``."""
    def assign(round_case: Case) -> pa.Table:
        case_file = folder / f"{assignor}-case.txt"
        case_file.write_text(case_text(round_case), encoding="utf-8")
        output = folder / f"{assignor}-java.tsv"
        run_java(case_file, assignor, warmup=0, runs=0, output=output)
        return read_assignment(output)

    return converge(assign, case, limit)


def _call(spark: SparkSession, case: Case, name: str) -> tuple[pa.Table, float]:
    """One groupcoord assignment of ``case``, the group id filled in for an unbatched call, and its seconds."""
    from groupcoord.assignors import get_assignor
    from groupcoord.assignors.collect import to_arrow

    members, partitions, owned = case_frames(spark, case)
    started = time.perf_counter()
    table = to_arrow(get_assignor(name).assign(members, partitions, owned))
    seconds = time.perf_counter() - started
    if "group_id" not in table.column_names:
        only = "g0" if isinstance(case, Generated) else case[0].group_id
        table = table.add_column(0, "group_id", pa.array([only] * table.num_rows, pa.string()))
    return table, seconds


def ours_converged(spark: SparkSession, case: Case, name: str, limit: int = MAX_ROUNDS) -> tuple[pa.Table, int]:
    """:func:`converge` with groupcoord's ``name`` in ``spark``."""
    return converge(lambda round_case: _call(spark, round_case, name)[0], case, limit)


def peak_rss_mib() -> float:
    """Peak resident memory of this process plus its children (the Spark JVM), from ``/proc``."""
    def peak(pid: str) -> int:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return 0
        return next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")), 0)

    me = str(os.getpid())
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if stat.read_text().rsplit(")", 1)[1].split()[1] == me:
                children.append(stat.parent.name)
        except (OSError, IndexError):
            continue
    return (peak(me) + sum(peak(child) for child in children)) / 1024


def run_ours(case_file: Path, assignors: list[str], *, warmup: int, runs: int, output_dir: Path | None = None,
             timeout: float | None = None) -> dict[str, Measured]:
    """groupcoord's ``assignors`` on ``case_file`` in one fresh Python process with a fresh SparkSession, one after
    the other, each as :func:`run_java` does (so only the first assignor's first call is a fresh process's).
    First calls' outputs go to ``output_dir/<assignor>.tsv`` when given."""
    command = [sys.executable, "-m", "bench.assign_java_peer", str(case_file), ",".join(assignors), str(warmup),
               str(runs), str(output_dir) if output_dir else "-"]
    lines = [line[len(RESULT_PREFIX):] for line in run_command(command, timeout).splitlines()
             if line.startswith(RESULT_PREFIX)]
    return {name: Measured.from_json(line, output_dir / f"{name}.tsv" if output_dir else None)
            for name, line in zip(assignors, lines, strict=True)}


def _ours_main(argv: list[str]) -> None:
    """The subprocess side of :func:`run_ours`."""
    from bench.assign import _session

    case_file, names, warmup, runs, output_dir = argv
    case = read_case(Path(case_file).read_text(encoding="utf-8"))
    spark = _session()
    for name in names.split(","):
        table, cold = _call(spark, case, name)
        if output_dir != "-":
            write_assignment(Path(output_dir) / f"{name}.tsv", table)
        del table
        for _ in range(int(warmup)):
            _call(spark, case, name)
        warm = [_call(spark, case, name)[1] for _ in range(int(runs))]
        result: dict[str, Any] = {"cold_s": cold, "warm_s": warm, "peak_rss_mib": round(peak_rss_mib(), 1)}
        print(RESULT_PREFIX + json.dumps(result), flush=True)
    spark.stop()


if __name__ == "__main__":
    _ours_main(sys.argv[1:])
