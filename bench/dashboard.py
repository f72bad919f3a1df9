"""Validate the Grafana dashboard (``docs/grafana-dashboard.json``) against a real Prometheus, and draw its panels.

``python -m bench.dashboard [--seconds 180]`` (Prometheus from the Debian package: ``apt-get install prometheus``):

1. starts ``groupcoord serve --no-spark --metrics-listen 127.0.0.1:PORT`` over a new state root with topic ``orders``
   (6 partitions), and a Prometheus scraping ``/metrics`` every 5 s;
2. runs :class:`bench.dashboard_load.Load` (a producer, classic and KIP-848 consumers committing, members leaving
   and rejoining) for ``--seconds``;
3. runs every query of every panel through Prometheus's ``/api/v1/query_range`` over the load, as Grafana would;
   a query that returns no series, or only NaN, fails the run;
4. draws each row of the dashboard as one PNG (a subplot per panel, a line per series, named by its
   ``legendFormat``) into ``docs/dashboard/``, and writes ``docs/dashboard/results.json`` (the command, the date,
   the load's counts, and per query its series and points).

Grafana is not available here; its queries are Prometheus's, so this is what it would show.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.dashboard_load import TOPIC, Load
from bench.serve_process import ServeProcess
from groupcoord.host.coordinator_host import pick_free_port
from groupcoord.state_root import StateRoot
from groupcoord.topics import TopicCatalog

REPO = Path(__file__).resolve().parents[1]
DASHBOARD = REPO / "docs" / "grafana-dashboard.json"
OUT = REPO / "docs" / "dashboard"
SCRAPE_INTERVAL_S = 5
"""Seconds between scrapes, which is also their timeout (Prometheus's default interval is 15 s: 5 s gives a few
minutes of load enough points, and a scrape slowed by a loaded machine its time)."""
STEP_S = 5


@dataclass
class Query:
    """One panel target and what Prometheus returned for it."""

    expr: str
    legend: str
    series: list[tuple[str, list[float], list[float]]] = field(default_factory=list)
    """``(legend, seconds since the load's start, values)`` per series."""

    @property
    def points(self) -> int:
        """Values that are numbers (not NaN) over every series."""
        return sum(1 for _, _, values in self.series for v in values if not math.isnan(v))

    @property
    def has_data(self) -> bool:
        """At least one series with a number in it."""
        return self.points > 0


@dataclass
class Panel:
    """One panel of the dashboard: its row, title, unit and queries."""

    row: str
    title: str
    unit: str
    queries: list[Query]


def panels(dashboard: dict[str, Any]) -> list[Panel]:
    """The dashboard's panels in order, each with the row it is under."""
    found, row = [], ""
    for panel in dashboard["panels"]:
        if panel["type"] == "row":
            row = panel["title"]
            continue
        unit = panel.get("fieldConfig", {}).get("defaults", {}).get("unit", "")
        found.append(Panel(row, panel["title"], unit, [Query(t["expr"], t.get("legendFormat", ""))
                                                         for t in panel["targets"]]))
    return found


def _legend(template: str, labels: dict[str, str]) -> str:
    text = re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: labels.get(m.group(1), ""), template).strip()
    return text or ", ".join(f"{k}={v}" for k, v in sorted(labels.items())) or "value"


def query_range(prometheus: str, query: Query, start: float, end: float) -> None:
    """Fill ``query.series`` from Prometheus's range query over ``[start, end]``."""
    params = urllib.parse.urlencode({"query": query.expr, "start": start, "end": end, "step": STEP_S})
    with urllib.request.urlopen(f"http://{prometheus}/api/v1/query_range?{params}", timeout=30) as response:
        answer = json.load(response)
    if answer.get("status") != "success":
        raise RuntimeError(f"Prometheus refused {query.expr!r}: {answer}")
    for result in answer["data"]["result"]:
        times = [float(t) - start for t, _ in result["values"]]
        values = [float(v) for _, v in result["values"]]
        query.series.append((_legend(query.legend, result["metric"]), times, values))


def scrape_health(prometheus: str, start: float, end: float) -> dict[str, float]:
    """How Prometheus's scrapes of ``/metrics`` went over the load: attempts, failures, slowest duration."""
    up, duration = Query("up", ""), Query("scrape_duration_seconds", "")
    query_range(prometheus, up, start, end)
    query_range(prometheus, duration, start, end)
    ups = [v for _, _, values in up.series for v in values]
    durations = [v for _, _, values in duration.series for v in values if not math.isnan(v)]
    return {"samples": len(ups), "failed": sum(1 for v in ups if v != 1),
            "max_duration_s": round(max(durations, default=0.0), 3)}


class Prometheus:
    """A Prometheus process scraping ``target`` every :data:`SCRAPE_INTERVAL_S`, its data under ``work``."""

    def __init__(self, binary: str, work: Path, target: str) -> None:
        config = work / "prometheus.yml"
        config.write_text(
            f"global:\n  scrape_interval: {SCRAPE_INTERVAL_S}s\n  evaluation_interval: {SCRAPE_INTERVAL_S}s\n"
            f"scrape_configs:\n  - job_name: groupcoord\n    static_configs:\n      - targets: ['{target}']\n")
        self.address = f"127.0.0.1:{pick_free_port('127.0.0.1')}"
        self._log = (work / "prometheus.log").open("w")
        self.proc = subprocess.Popen(
            [binary, f"--config.file={config}", f"--storage.tsdb.path={work / 'tsdb'}",
             f"--web.listen-address={self.address}", "--log.level=warn"],
            stdout=self._log, stderr=subprocess.STDOUT)

    def wait_ready(self, timeout_s: float = 60.0) -> None:
        """Return once Prometheus answers ``/-/ready``."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"prometheus exited with {self.proc.returncode}")
            try:
                with urllib.request.urlopen(f"http://{self.address}/-/ready", timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"prometheus was not ready within {timeout_s:g} s")

    def wait_scraped(self, timeout_s: float = 60.0) -> None:
        """Return once a scrape of the target has landed (``up == 1``): the load must not start before it, or its
        first events would be in the series' first sample, and no rate would ever show them."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            probe = Query("up", "")
            query_range(self.address, probe, time.time() - 10, time.time())
            if any(values and values[-1] == 1 for _, _, values in probe.series):
                return
            time.sleep(0.5)
        raise RuntimeError(f"prometheus did not scrape the target within {timeout_s:g} s")

    def stop(self) -> None:
        """Terminate and reap."""
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self._log.close()


COLUMNS = 4
"""Panels per line of a row's PNG."""
BUSY = 4
"""A panel with more series than this leaves its all-zero series out of the PNG (say, the group states no group is
in), so that the legend does not hide the lines; the check counted them all."""


def _drawn(panel: Panel) -> list[tuple[str, list[float], list[float]]]:
    series = [s for query in panel.queries for s in query.series]
    if len(series) <= BUSY:
        return series
    return [s for s in series if any(v != 0 and not math.isnan(v) for v in s[2])] or series


def render(found: list[Panel], out: Path) -> list[Path]:
    """One PNG per dashboard row (a subplot per panel, :data:`COLUMNS` to a line); returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    rows = list(dict.fromkeys(p.row for p in found))
    for index, row in enumerate(rows, start=1):
        row_panels = [p for p in found if p.row == row]
        columns = min(COLUMNS, len(row_panels))
        lines = math.ceil(len(row_panels) / columns)
        figure, axes = plt.subplots(lines, columns, figsize=(4.6 * columns, 4.4 * lines), squeeze=False)
        for ax in axes.flat[len(row_panels):]:
            ax.set_visible(False)
        for ax, panel in zip(axes.flat, row_panels, strict=False):
            drawn = _drawn(panel)
            colors = plt.get_cmap("tab20" if len(drawn) > 10 else "tab10")  # no two series of a panel alike
            for number, (legend, times, values) in enumerate(drawn):
                ax.plot(times, values, label=legend, linewidth=1.2, color=colors(number % colors.N))
            ax.set_title(panel.title, fontsize=10)
            ax.set_xlabel("seconds into the load", fontsize=8)
            if panel.unit not in ("", "none", "short"):
                ax.set_ylabel(panel.unit, fontsize=8)
            ax.tick_params(labelsize=7)
            ax.grid(alpha=0.3)
            # Below the plot, as Grafana puts it: inside, a legend hid the lines it covered.
            ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, frameon=False)
        figure.suptitle(row, fontsize=12)
        figure.tight_layout()
        path = out / f"{index}-{re.sub(r'[^a-z0-9]+', '-', row.lower()).strip('-')}.png"
        figure.savefig(path, dpi=90)
        plt.close(figure)
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    """Run the check (see the module docs); 0 when every panel returned data."""
    parser = argparse.ArgumentParser(prog="python -m bench.dashboard", description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=180.0, help="how long the load runs (default 180)")
    parser.add_argument("--prometheus", default="prometheus", help="the Prometheus binary (default: on PATH)")
    parser.add_argument("--out", type=Path, default=OUT, help="where the PNGs and results.json go")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (serve's log, Prometheus's data)")
    args = parser.parse_args(argv)
    binary = shutil.which(args.prometheus)
    if binary is None:
        parser.error(f"no {args.prometheus!r} binary: install Prometheus (apt-get install prometheus)")
    found = panels(json.loads(DASHBOARD.read_text()))
    load_at_start = [round(v, 1) for v in os.getloadavg()]
    work = Path(tempfile.mkdtemp(prefix="groupcoord-dashboard-"))
    root = StateRoot.open(work / "root", create=True)
    TopicCatalog(root).create(TOPIC, 6)
    metrics = f"127.0.0.1:{pick_free_port('127.0.0.1')}"
    serve = ServeProcess(root.path, "--metrics-listen", metrics, "--conf", "group.initial.rebalance.delay.ms=0",
                         log_path=work / "serve.log")
    prometheus: Prometheus | None = None
    load: Load | None = None
    try:
        ready = serve.wait_ready(120)
        if ready is None:
            raise RuntimeError(f"serve did not become ready; see {work / 'serve.log'}")
        prometheus = Prometheus(binary, work, metrics)
        prometheus.wait_ready()
        prometheus.wait_scraped()
        load = Load(f"{ready[0]}:{ready[1]}")
        start = time.time()
        load.start()
        time.sleep(args.seconds)
        end = time.time()  # the range ends before the clients leave: the panels show the load, not its end
        time.sleep(2 * SCRAPE_INTERVAL_S)  # the last scrapes land
        load.stop()
        for panel in found:
            for query in panel.queries:
                query_range(prometheus.address, query, start, end)
        scrapes = scrape_health(prometheus.address, start, end)
    finally:
        if load is not None:
            load.stop()
        if prometheus is not None:
            prometheus.stop()
        serve.close()
    args.out.mkdir(parents=True, exist_ok=True)
    images = render(found, args.out)
    empty = [f"{p.title}: {q.expr}" for p in found for q in p.queries if not q.has_data]
    results = {
        "command": shlex.join([sys.executable.rsplit("/", 1)[-1], "-m", "bench.dashboard", *(argv or sys.argv[1:])]),
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "commit": subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                                 text=True, check=False).stdout.strip(),
        "load_seconds": args.seconds, "scrape_interval_s": SCRAPE_INTERVAL_S, "step_s": STEP_S,
        "machine": {"cpus": os.cpu_count(), "load_average_at_start": load_at_start,
                    "load_average_at_end": [round(v, 1) for v in os.getloadavg()]},
        "load": dict(sorted(load.counts.items())) if load is not None else {},
        "images": [path.name for path in images],
        "scrapes": scrapes,
        "panels_without_data": empty,
        "panels": [{"row": p.row, "title": p.title, "queries": [
            {"expr": q.expr, "series": [s[0] for s in q.series], "points": q.points} for q in p.queries]}
            for p in found],
    }
    (args.out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    print(f"{len(found)} panels, {sum(len(p.queries) for p in found)} queries; images in {args.out}")
    for line in empty:
        print(f"NO DATA: {line}")
    print(f"scrapes: {scrapes}")
    if args.keep:
        print(f"work directory kept: {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if empty else 0


if __name__ == "__main__":
    sys.exit(main())
