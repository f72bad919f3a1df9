"""A/B of two commits on ``peer_ingest``'s groupcoord side: the same broker and topic, the checkouts alternated.

``python -m bench.peer_ingest_ab --before DIR --after DIR [--runs 3]``: ``DIR`` is a checkout (a ``git worktree`` of
the commit, with a ``.venv`` or a link to one). One dev broker holds ``peer_ingest``'s quick topic (100,000 records of
1 KB, 12 partitions). Each run measures, on both of ``peer_ingest``'s masters, the groupcoord side
(:func:`bench.peer_ingest.measure`: the cold one-shot job, then the first and the second ingestion in one process)
once with each checkout, the order swapped every run. Each sample is its own process with ``PYTHONPATH`` set to its
checkout, so the driver and the Python workers import that checkout's code.

It is how a regression one commit range brought is found and shown fixed (``bench/known_regressions.md``); it is not
part of ``make bench``, which measures one checkout against its peers. Writes ``bench/results/peer_ingest_ab.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.peer_ingest import MASTERS, PARTITIONS, QUICK_RECORDS, TOPIC, records
from bench.results_io import Check, write_result
from groupcoord.devbroker import PEER_JVM_OPTIONS, KafkaBroker

FIGURES = ("cold_s", "first_in_process_s", "warm_s")
SIDES = ("before", "after")
SAMPLE_MARK = "SAMPLE "


def sample(checkout: Path, master: str, members: int, bootstrap: str, work: Path) -> dict[str, Any]:
    """One measurement of the groupcoord side with ``checkout``'s code (a process of its own)."""
    code = ("import json, sys; from pathlib import Path; from bench.peer_ingest import measure; "
            f"print({SAMPLE_MARK!r} + json.dumps(measure('groupcoord', sys.argv[1], int(sys.argv[2]), sys.argv[3], "
            f"Path(sys.argv[4]), {QUICK_RECORDS})))")
    finished = subprocess.run([str(checkout / ".venv" / "bin" / "python"), "-c", code, master, str(members),
                               bootstrap, str(work)], cwd=checkout, env={**os.environ, "PYTHONPATH": str(checkout)},
                              capture_output=True, text=True, check=False)
    found = [line.removeprefix(SAMPLE_MARK) for line in finished.stdout.splitlines() if line.startswith(SAMPLE_MARK)]
    if finished.returncode != 0 or not found:
        raise RuntimeError(f"{checkout} on {master} failed:\n{finished.stderr[-3000:]}")
    return dict(json.loads(found[0]))


def collect(checkouts: dict[str, Path], runs: int) -> list[dict[str, Any]]:
    """Every sample: ``runs`` rounds, each master, each side (the order swapped every round)."""
    samples: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="peer-ingest-ab-") as tmp, \
            KafkaBroker.start(Path(tmp) / "kafka", jvm_options=PEER_JVM_OPTIONS) as broker:
        broker.create_topic(TOPIC, partitions=PARTITIONS)
        broker.produce(TOPIC, records(QUICK_RECORDS))
        for run in range(runs):
            order = SIDES if run % 2 == 0 else SIDES[::-1]
            for master, members in MASTERS:
                for side in order:
                    work = Path(tmp) / f"{len(samples)}"
                    measured = sample(checkouts[side], master, members, broker.bootstrap, work)
                    samples.append({"checkout": side, "run": run + 1, "master": master, "members": members,
                                    **{f: measured[f] for f in FIGURES}, "load_avg_1m": measured["load_avg_1m"]})
                    print(time.strftime("%H:%M:%S"), samples[-1], flush=True)
    return samples


def summarise(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per master and figure: each side's samples in run order, their medians, and after / before."""
    rows = []
    for master, members in MASTERS:
        for figure in FIGURES:
            values = {side: [s[figure] for s in samples if s["master"] == master and s["checkout"] == side]
                      for side in SIDES}
            medians = {side: statistics.median(v) for side, v in values.items()}
            rows.append({"master": master, "members": members, "figure": figure,
                         **{side: " / ".join(f"{v:.1f}" for v in values[side]) for side in SIDES},
                         **{f"{side}_median": round(medians[side], 1) for side in SIDES},
                         "after_over_before": round(medians["after"] / medians["before"], 2)})
    return rows


def spread_checks(samples: list[dict[str, Any]]) -> list[Check]:
    """Per master and figure: the after side's median no slower than the before side's slowest sample (the later
    commit stays within the earlier one's spread)."""
    checks = []
    for master, _ in MASTERS:
        for figure in FIGURES:
            before = [s[figure] for s in samples if s["master"] == master and s["checkout"] == "before"]
            after = [s[figure] for s in samples if s["master"] == master and s["checkout"] == "after"]
            checks.append(Check("peer_ingest_ab", f"after_median_{figure}[{master}]", "speed",
                                statistics.median(after), "<=", max(before)))
    return checks


def record(samples: list[dict[str, Any]], commits: dict[str, str], command: str | None = None) -> Path:
    """Write ``bench/results/peer_ingest_ab.json`` from ``samples``."""
    return write_result(
        "peer_ingest_ab",
        checks=spread_checks(samples),
        title="A/B of two commits: the groupcoord side of peer_ingest (members engine), alternated",
        rows=summarise(samples), summary={"before": commits["before"], "after": commits["after"],
                                          "records": QUICK_RECORDS,
                                          "load_avg_1m": f"{min(s['load_avg_1m'] for s in samples)}-"
                                                         f"{max(s['load_avg_1m'] for s in samples)}"},
        command=command,
        notes=("Seconds; each side's samples in run order (the order of the two checkouts swapped every run). "
               "cold_s: jobs/streaming_ingest.py --engine members as one spark-submit process, command to exit; "
               "first_in_process_s / warm_s: the first and the second ingestion in one process. One broker, one "
               "topic of 100,000 records of 1 KB in 12 partitions, for every sample."),
    )


def commit_of(checkout: Path) -> str:
    """The short commit id of ``checkout``."""
    return subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, collect the samples, write the result."""
    parser = argparse.ArgumentParser(prog="python -m bench.peer_ingest_ab", description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="checkout of the earlier commit")
    parser.add_argument("--after", type=Path, required=True, help="checkout of the later commit")
    parser.add_argument("--runs", type=int, default=3, help="rounds (each side once per master per round)")
    args = parser.parse_args(argv)
    checkouts = {"before": args.before.resolve(), "after": args.after.resolve()}
    for side, checkout in checkouts.items():
        if not (checkout / ".venv" / "bin" / "python").exists():
            parser.error(f"--{side} {checkout}: no .venv/bin/python there (link the main checkout's venv)")
    samples = collect(checkouts, args.runs)
    print(record(samples, {side: commit_of(c) for side, c in checkouts.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
