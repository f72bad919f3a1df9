"""The executor-member demo (``make run-members``: ``run_members``, three members, one leaves part way) with
server-side assignment against the same demo with leader-side ``cooperative-sticky`` (issue 20).

Each run is ``python -m groupcoord.ingest.demo_pipeline --engine members`` in a fresh directory, so a fresh job
driver: ``server-cooperative-sticky`` (the coordinator in the driver assigns; a group this small runs on the driver's
Python engine) or ``--assignors cooperative-sticky`` (the group's leader assigns). The variants alternate; recorded
are the p50 of the job's time (spark-submit of ``jobs/streaming_ingest.py``) and of the whole demo. Target: the
server-side job at most 1.2 x the leader-side one. Every run must end with the sink holding every record once.
"""

from __future__ import annotations

import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.results_io import write_result

VARIANTS: dict[str, tuple[str, ...]] = {
    "server-cooperative-sticky": (),
    "cooperative-sticky (leader)": ("--assignors", "cooperative-sticky"),
}
_JOB = re.compile(r"\[demo\] streaming_ingest exited (\d+) after ([\d.]+)s")
_TOTAL = re.compile(r"\[demo\] total ([\d.]+)s")


def _run(scratch: Path, variant: str, index: int) -> tuple[float, float]:
    """One demo: the job's seconds and the whole demo's."""
    out = subprocess.run([sys.executable, "-m", "groupcoord.ingest.demo_pipeline", "--engine", "members",
                          "--var", str(scratch / f"run-{index}"), *VARIANTS[variant]],
                         capture_output=True, text=True, timeout=900, check=False)
    job, total = _JOB.search(out.stdout), _TOTAL.search(out.stdout)
    if out.returncode != 0 or job is None or total is None or job.group(1) != "0":
        raise RuntimeError(f"{variant}: demo failed ({out.returncode}):\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    return float(job.group(2)), float(total.group(1))


def main(full: bool) -> None:
    """Alternate the two variants; record the p50 job and demo times."""
    repetitions = 5 if full else 2
    times: dict[str, list[tuple[float, float]]] = {v: [] for v in VARIANTS}
    with tempfile.TemporaryDirectory(prefix="demo-") as scratch:
        for repetition in range(repetitions):
            for index, variant in enumerate(VARIANTS):
                times[variant].append(_run(Path(scratch), variant, repetition * len(VARIANTS) + index))
                print(f"  {repetition}: {variant}: job {times[variant][-1][0]:.1f} s, "
                      f"demo {times[variant][-1][1]:.1f} s", flush=True)
    leader_job = statistics.median(job for job, _ in times["cooperative-sticky (leader)"])
    rows: list[dict[str, Any]] = []
    for variant, runs in times.items():
        job = statistics.median(j for j, _ in runs)
        server = variant.startswith("server")
        rows.append({"assignors": variant, "n": len(runs), "job_p50_s": round(job, 1),
                     "demo_p50_s": round(statistics.median(d for _, d in runs), 1),
                     "ratio": round(job / leader_job, 2), "target_ratio": 1.2 if server else None,
                     "met": job <= 1.2 * leader_job if server else None})
    for row in rows:
        print(row, flush=True)
    write_result("assign_demo", title="Executor-member demo: server-side vs leader-side assignment", rows=rows,
                 summary={"repetitions": repetitions},
                 notes=("`python -m groupcoord.ingest.demo_pipeline --engine members` (make run-members: 12 partitions "
                        "x 100k records, 3 executor members, member 0 leaves after 15,000 records), each run a fresh "
                        "job driver; variants alternate. job: the spark-submit of jobs/streaming_ingest.py; demo: "
                        "the whole script. Target: server-side job <= 1.2 x leader-side job."))
