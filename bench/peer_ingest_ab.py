"""A/B of two commits on ``peer_ingest``'s groupcoord side: the same broker and topic, the checkouts alternated.

``python -m bench.peer_ingest_ab --before DIR --after DIR [--runs 3]``: ``DIR`` is a checkout (a ``git worktree`` of
the commit, with a ``.venv`` or a link to one). One dev broker and one state root's embedded topic log hold
``peer_ingest``'s quick topic (100,000 records of 1 KB, 12 partitions). Each run measures, on both of
``peer_ingest``'s masters, both groupcoord sides (reading the broker and the embedded log;
:func:`bench.peer_ingest.measure`: one spark-submit process, its cold first ingestion and its warm second) once with
each checkout, the order swapped every run. Each sample is its own process with ``PYTHONPATH`` set to its checkout,
so the driver and the Python workers import that checkout's code; this checkout's :func:`bench.peer_ingest.measure`
times both (the checkouts' ``bench/streaming_ingest_app.py`` take the same arguments).

It is how a regression one commit range brought is found and shown fixed (``bench/known_regressions.md``); it is not
part of ``make bench``, which measures one checkout against its peers. Writes ``bench/results/peer_ingest_ab.json``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.peer_ingest import (
    MASTERS,
    OURS_EMBEDDED,
    OURS_KAFKA,
    PARTITIONS,
    QUICK_RECORDS,
    TOPIC,
    measure,
    produce_embedded,
    records,
)
from bench.results_io import Check, write_result
from groupcoord.devbroker import PEER_JVM_OPTIONS, KafkaBroker
from groupcoord.state_root import StateRoot

FIGURES = ("cold_s", "first_in_process_s", "warm_s")
CHECKOUTS = ("before", "after")
GROUPCOORD_SIDES = (OURS_KAFKA, OURS_EMBEDDED)


def collect(checkouts: dict[str, Path], runs: int) -> list[dict[str, Any]]:
    """Every sample: ``runs`` rounds, each master and groupcoord side, each checkout (the order swapped every
    round)."""
    samples: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="peer-ingest-ab-") as tmp, \
            KafkaBroker.start(Path(tmp) / "kafka", jvm_options=PEER_JVM_OPTIONS) as broker:
        state_root = Path(tmp) / "state"
        broker.create_topic(TOPIC, partitions=PARTITIONS)
        broker.produce(TOPIC, records(QUICK_RECORDS))
        produce_embedded(StateRoot.open(state_root, create=True), TOPIC, QUICK_RECORDS)
        for run in range(runs):
            order = CHECKOUTS if run % 2 == 0 else CHECKOUTS[::-1]
            for master in MASTERS:
                for side in GROUPCOORD_SIDES:
                    for checkout in order:
                        work = Path(tmp) / f"{len(samples)}"
                        measured = measure(side, master, broker.bootstrap, state_root, work, QUICK_RECORDS,
                                           repo=checkouts[checkout])
                        samples.append({"checkout": checkout, "run": run + 1, "master": master, "side": side,
                                        **{f: measured[f] for f in FIGURES}, "load_avg_1m": measured["load_avg_1m"]})
                        print(time.strftime("%H:%M:%S"), samples[-1], flush=True)
    return samples


def summarise(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per master, groupcoord side and figure: each checkout's samples in run order, their medians, and after /
    before."""
    rows = []
    for master in MASTERS:
        for side in GROUPCOORD_SIDES:
            for figure in FIGURES:
                values = {c: [s[figure] for s in samples
                              if s["master"] == master and s["side"] == side and s["checkout"] == c]
                          for c in CHECKOUTS}
                medians = {c: statistics.median(v) for c, v in values.items()}
                rows.append({"master": master, "reads": side.removeprefix("groupcoord_"), "figure": figure,
                             **{c: " / ".join(f"{v:.1f}" for v in values[c]) for c in CHECKOUTS},
                             **{f"{c}_median": round(medians[c], 1) for c in CHECKOUTS},
                             "after_over_before": round(medians["after"] / medians["before"], 2)})
    return rows


def spread_checks(samples: list[dict[str, Any]]) -> list[Check]:
    """Per master, groupcoord side and figure: the after checkout's median no slower than the before checkout's
    slowest sample (the later commit stays within the earlier one's spread)."""
    checks = []
    for master in MASTERS:
        for side in GROUPCOORD_SIDES:
            for figure in FIGURES:
                before, after = ([s[figure] for s in samples if s["master"] == master and s["side"] == side
                                  and s["checkout"] == c] for c in CHECKOUTS)
                checks.append(Check("peer_ingest_ab", f"after_median_{figure}[{side.removeprefix('groupcoord_')}, "
                                    f"{master}]", "speed", statistics.median(after), "<=", max(before)))
    return checks


def record(samples: list[dict[str, Any]], commits: dict[str, str], command: str | None = None) -> Path:
    """Write ``bench/results/peer_ingest_ab.json`` from ``samples``."""
    return write_result(
        "peer_ingest_ab",
        checks=spread_checks(samples),
        title="A/B of two commits: the groupcoord sides of peer_ingest (Structured Streaming), alternated",
        rows=summarise(samples), summary={"before": commits["before"], "after": commits["after"],
                                          "records": QUICK_RECORDS,
                                          "load_avg_1m": f"{min(s['load_avg_1m'] for s in samples)}-"
                                                         f"{max(s['load_avg_1m'] for s in samples)}"},
        command=command,
        notes=("Seconds; each checkout's samples in run order (the order of the two checkouts swapped every run). "
               "One spark-submit of bench/streaming_ingest_app.py throughput per sample: cold_s from the command to "
               "the end of its first ingestion, first_in_process_s / warm_s the first and the second ingestion "
               "timed in the process. One broker and one embedded topic log, each holding one topic of 100,000 "
               "records of 1 KB in 12 partitions, for every sample."),
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
    for name, checkout in checkouts.items():
        if not (checkout / ".venv" / "bin" / "python").exists():
            parser.error(f"--{name} {checkout}: no .venv/bin/python there (link the main checkout's venv)")
    samples = collect(checkouts, args.runs)
    print(record(samples, {name: commit_of(c) for name, c in checkouts.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
