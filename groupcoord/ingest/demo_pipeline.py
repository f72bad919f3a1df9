"""``make run`` (and ``make run-members``): the whole pipeline on one machine, under ``./var/demo`` (gitignored).

1. a fresh state root with topic ``demo``: 12 partitions, 100,000 records in the embedded log;
2. ``jobs/streaming_ingest.py`` under ``bin/spark-submit`` in ``local[4,4]``, ``--available-now`` so the job ends when
   it caught up, with one of two engines:

   - ``--engine structured`` (``make run``): two Structured Streaming queries in one group,
     ``readStream.format("groupcoord")`` into ``writeStream.format("groupcoord-delta")`` on one table; query 0 stops
     after ``--leave-after`` records and its partitions move to query 1;
   - ``--engine members`` (``make run-members``): 3 executor members; member 0 leaves after ``--leave-after``
     records (a rebalance);

3. ``groupcoord groups describe`` and a lag table (committed offset, sink transaction version, log end);
4. the check: the sink holds exactly the 100,000 records, each once, and the committed offsets equal the sink's
   transaction versions. Exit 0 only when that holds.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from kafka.structs import TopicPartition

from groupcoord.ingest.check import check_exactly_once, embedded_rows
from groupcoord.ingest.demo_data import create_demo_topic
from groupcoord.sink.table import SinkTable
from groupcoord.spark.submit import VENV_ENV, WRAPPER
from groupcoord.state.schema import OFFSETS
from groupcoord.state.views import read_view
from groupcoord.state_root import StateRoot
from groupcoord.topics import TopicLog

TOPIC = "demo"
GROUP = "demo-ingest"
REPO = Path(__file__).resolve().parents[2]
CHECKED_COLUMNS = ("topic", "partition", "offset", "value")


def spark_submit() -> Path:
    """``bin/spark-submit``: the way the README runs the jobs (this venv's Spark, Delta's jars, quiet Spark logs)."""
    return WRAPPER


def spark_submit_env() -> dict[str, str]:
    """This environment with ``bin/spark-submit`` pointed at the running interpreter's venv."""
    return {**os.environ, VENV_ENV: sys.prefix}


def lag_table(root: StateRoot, sink: SinkTable) -> tuple[list[str], dict[TopicPartition, int | None]]:
    """Rows of ``PARTITION COMMITTED SINK-VERSION LOG-END LAG`` and the committed offsets they show."""
    ends = TopicLog(root, TOPIC).end_offsets()
    committed: dict[TopicPartition, int | None] = {TopicPartition(TOPIC, p): None for p in ends}
    for row in read_view(root, OFFSETS).to_pylist():
        if row["group_id"] == GROUP and row["topic"] == TOPIC:
            committed[TopicPartition(TOPIC, row["partition"])] = row["offset"]
    versions = sink.versions(committed)
    lines = [f"{'TOPIC':<8}{'PARTITION':>10}{'COMMITTED':>12}{'SINK-VERSION':>14}{'LOG-END':>10}{'LAG':>8}"]
    for tp in sorted(committed):
        done = committed[tp] or 0
        lines.append(f"{TOPIC:<8}{tp.partition:>10}{_show(committed[tp]):>12}{_show(versions[tp]):>14}"
                     f"{ends[tp.partition]:>10}{ends[tp.partition] - done:>8}")
    return lines, committed


def _show(value: int | None) -> str:
    return "-" if value is None else str(value)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo; 0 when the sink holds every record exactly once."""
    parser = argparse.ArgumentParser(prog="demo_pipeline", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--var", default=str(REPO / "var" / "demo"), help="working directory (wiped first)")
    parser.add_argument("--partitions", type=int, default=12)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--engine", choices=("structured", "members"), default="structured",
                        help="structured: queries into groupcoord-delta; members: executor tasks as members")
    parser.add_argument("--members", type=int, default=None,
                        help="queries (structured, default 2) or executor members (members, default 3)")
    parser.add_argument("--leave-after", type=int, default=15_000, help="member 0 leaves after N records")
    parser.add_argument("--batch", type=int, default=None,
                        help="records per sink commit: per query and micro-batch (structured, default 10000), per "
                             "member and partition (members, default 1000)")
    parser.add_argument("--assignors", default="server-cooperative-sticky",
                        help="assignors the members offer (cooperative-sticky: leader-side, no Spark assignment job)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)  # only this script's process; the job logs through groupcoord

    var = Path(args.var)
    shutil.rmtree(var, ignore_errors=True)
    root = StateRoot.open(var / "state", create=True)
    sink_path = var / "sink"
    started = time.monotonic()
    create_demo_topic(root, TOPIC, partitions=args.partitions, records=args.records)
    print(f"[demo] topic {TOPIC}: {args.partitions} partitions, {args.records:,} records "
          f"({time.monotonic() - started:.1f}s)", flush=True)

    structured = args.engine == "structured"
    members = args.members or (2 if structured else 3)
    batch = args.batch or (10_000 if structured else 1000)
    python = sys.executable
    command = [
        str(spark_submit().relative_to(REPO)), "--master", "local[4,4]", "--conf", "spark.ui.enabled=false",
        "--conf", "spark.sql.shuffle.partitions=4", "--conf", f"spark.groupcoord.state.root={root.path}",
        "--conf", "spark.groupcoord.group.initial.rebalance.delay.ms=500",
        "jobs/streaming_ingest.py",
        "--engine", args.engine, "--group", GROUP, "--topics", TOPIC, "--sink", str(sink_path),
        "--members", str(members),
        "--available-now", "--demo-leave-after", str(args.leave_after), "--max-records-per-batch", str(batch),
        "--assignors", args.assignors,
    ]
    print("[demo] $ " + " ".join(command), flush=True)
    job_started = time.monotonic()
    job = subprocess.run(command, env=spark_submit_env(), cwd=REPO, check=False)
    print(f"[demo] streaming_ingest exited {job.returncode} after {time.monotonic() - job_started:.1f}s", flush=True)

    print("\n[demo] $ groupcoord groups describe --group " + GROUP, flush=True)
    subprocess.run([python, "-m", "groupcoord", "groups", "describe", "--group", GROUP, "--state-root",
                    str(root.path)], check=False)
    subprocess.run([python, "-m", "groupcoord", "groups", "describe", "--group", GROUP, "--state", "--state-root",
                    str(root.path)], check=False)

    sink = SinkTable(sink_path, GROUP)
    lines, committed = lag_table(root, sink)
    print("\n[demo] lag (committed offsets vs. sink transactions vs. log end)")
    print("\n".join(lines))
    result = check_exactly_once(sink.read_all(CHECKED_COLUMNS), embedded_rows(root, [TOPIC]))
    versions = sink.versions(committed)
    offsets_match = committed == versions
    print(f"\n[demo] sink check: {result.summary()}")
    print(f"[demo] committed offsets {'==' if offsets_match else '!='} sink transaction versions")
    print(f"[demo] total {time.monotonic() - started:.1f}s")
    return 0 if job.returncode == 0 and result.ok and offsets_match else 1


if __name__ == "__main__":
    sys.exit(main())
