"""Run the benchmarks and regenerate the report: ``python -m bench.run [--full] [NAME ...]``.

Each benchmark module in :data:`BENCHMARKS` exposes ``main(full: bool) -> None`` and writes its results with
:func:`bench.results_io.write_result`.

The run ends with the list of failed checks that opens ``docs/benchmarks.md`` (every result's, see
:mod:`bench.report`) and exits 1 when a benchmark raised, or when a result this run wrote fails a correctness check
(lost or duplicated records, a failed schedule, rows unlike the peer's) or misses a target that has no line in
``bench/known_misses.txt``. A known speed miss is listed, and does not fail the run. A benchmark that raised has its
result replaced by the record of the failure (:func:`bench.results_io.write_failure`): every figure in the report
comes from the run it is dated with.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
import traceback
from pathlib import Path

from bench import report
from bench.results_io import RESULTS_DIR, known_misses, write_failure

BENCHMARKS: tuple[str, ...] = ("commit_throughput", "assign", "assign_java", "load_time", "simulate", "fuzz",
                                 "member_capacity", "failover", "rebalance_latency", "assign_heterogeneous",
                                 "assign_engines", "assign_first_rebalance", "assign_demo",
                                 "rebalance_soak", "peer_rebalance", "peer_commits", "peer_ingest", "streaming_ingest",
                                 "produce", "commit_sync", "fetch", "security_cost", "authorizer_cost",
                                 "partition_growth", "s3_disk", "cluster_faults")


FULL_ONLY: frozenset[str] = frozenset({"cluster_faults"})
"""Benchmarks a plain ``make bench`` leaves to ``make bench-full`` (or to being named): the cluster's fault drills
take about 20 minutes, a third of ``make bench``'s hour."""


def selected(names: list[str], full: bool) -> list[str]:
    """The benchmarks a run measures: the ones named, else every one (but :data:`FULL_ONLY` unless ``full``)."""
    return names or [name for name in BENCHMARKS if full or name not in FULL_ONLY]


def main(argv: list[str] | None = None) -> int:
    """Run the named benchmarks (all by default), then render ``docs/benchmarks.md``."""
    parser = argparse.ArgumentParser(prog="bench.run")
    parser.add_argument("--full", action="store_true", help="the long and large cases (make bench-full)")
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"one of: {', '.join(BENCHMARKS)}")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.names) - set(BENCHMARKS))
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; known: {', '.join(BENCHMARKS)}")
    before = _stamps()
    failed: list[str] = []
    for name in selected(args.names, args.full):
        started = time.perf_counter()
        print(f"== bench {name} ({'full' if args.full else 'quick'})", flush=True)
        try:
            importlib.import_module(f"bench.{name}").main(full=args.full)
        except Exception as exc:  # one broken benchmark must not cost the others' measurements: reported at the end
            traceback.print_exc()
            failed.append(name)
            lines = str(exc).strip().splitlines()
            write_failure(name, f"{type(exc).__name__}: {lines[-1] if lines else ''}")
            print(f"== bench {name} FAILED after {time.perf_counter() - started:.1f} s", flush=True)
            continue
        print(f"== bench {name} took {time.perf_counter() - started:.1f} s", flush=True)
    status = report.main()
    written = {path.stem for path, stamp in _stamps().items() if before.get(path) != stamp}
    failing = run_failures(report.misses(report.load_results(), known_misses()), written)
    for miss in failing:
        why = "failed correctness check" if miss.check.kind == "correctness" else "missed target, no reason recorded"
        print(f"bench.run: {why}: {miss.check.key} = {miss.check.value} (target {miss.check.op} {miss.check.target})",
              file=sys.stderr)
    if failed:
        print(f"bench.run: {len(failed)} benchmark(s) failed: {', '.join(failed)} (the report lists each as failed, "
              "with no figures: the previous ones are in git's history)", file=sys.stderr)
    return 1 if failed or failing else status


def run_failures(misses: list[report.Miss], written: set[str]) -> list[report.Miss]:
    """The misses that fail a run: in the results named in ``written`` (the ones the run wrote), every failed
    correctness check and every missed target with no reason recorded."""
    return [m for m in misses if m.check.benchmark in written and (m.check.kind == "correctness" or not m.explained)]


def _stamps() -> dict[Path, int]:
    """Each result file's modification time: the files a run changed are the results it wrote."""
    return {path: path.stat().st_mtime_ns for path in RESULTS_DIR.glob("*.json")}


if __name__ == "__main__":
    sys.exit(main())
