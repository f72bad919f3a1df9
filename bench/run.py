"""Run the benchmarks and regenerate the report: ``python -m bench.run [--full] [NAME ...]``.

Each benchmark module in :data:`BENCHMARKS` exposes ``main(full: bool) -> None`` and writes its results with
:func:`bench.results_io.write_result`.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
import traceback

from bench import report

BENCHMARKS: tuple[str, ...] = ("commit_throughput", "assign", "assign_java", "load_time", "simulate", "fuzz",
                                 "member_capacity", "failover", "rebalance_latency", "assign_heterogeneous",
                                 "assign_engines", "assign_first_rebalance", "assign_demo",
                                 "rebalance_soak", "peer_rebalance", "peer_commits", "peer_ingest", "streaming_ingest",
                                 "produce")


def main(argv: list[str] | None = None) -> int:
    """Run the named benchmarks (all by default), then render ``docs/benchmarks.md``."""
    parser = argparse.ArgumentParser(prog="bench.run")
    parser.add_argument("--full", action="store_true", help="the long and large cases (make bench-full)")
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"one of: {', '.join(BENCHMARKS)}")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.names) - set(BENCHMARKS))
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; known: {', '.join(BENCHMARKS)}")
    failed: list[str] = []
    for name in args.names or BENCHMARKS:
        started = time.perf_counter()
        print(f"== bench {name} ({'full' if args.full else 'quick'})", flush=True)
        try:
            importlib.import_module(f"bench.{name}").main(full=args.full)
        except Exception:  # one broken benchmark must not cost the others' measurements: reported at the end
            traceback.print_exc()
            failed.append(name)
            print(f"== bench {name} FAILED after {time.perf_counter() - started:.1f} s", flush=True)
            continue
        print(f"== bench {name} took {time.perf_counter() - started:.1f} s", flush=True)
    status = report.main()
    if failed:
        print(f"bench.run: {len(failed)} benchmark(s) failed: {', '.join(failed)} (their previous results stay in the "
              "report)", file=sys.stderr)
        return 1
    return status


if __name__ == "__main__":
    sys.exit(main())
