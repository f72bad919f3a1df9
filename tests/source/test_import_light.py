"""The source's modules that every Python worker of a query imports stay import-light (issue 29's cold start).

Spark imports :mod:`groupcoord.source.data_source` in each of a query's Python workers: to unpickle the source (its
planner workers) and the reader (each executor worker, before its first task), and in the driver-side worker that
plans the batches. The member, delta-rs, kafka-python and the metrics endpoint cost seconds of a loaded CPU there;
only the driver-side worker needs the first three, and nothing of the source needs the last. Each check runs in a
fresh interpreter and reads its ``sys.modules``.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

from groupcoord.source.data_source import GroupcoordStreamReader
from groupcoord.source.options import parse_source_options

REPO = Path(__file__).resolve().parents[2]

HEAVY = ("groupcoord.member", "groupcoord.coordinator", "groupcoord.log", "groupcoord.topics", "groupcoord.metrics",
         "groupcoord.source.query_plan", "groupcoord.source.query_member", "groupcoord.source.log_view", "deltalake",
         "kafka", "confluent_kafka", "prometheus_client")
"""What neither the planner workers nor the executors need of the source."""

ENDPOINT = ("groupcoord.metrics.http_server", "groupcoord.metrics.coordinator_metrics", "groupcoord.server",
            "groupcoord.runtime", "groupcoord.host", "prometheus_client", "http.server")
"""What the driver-side worker does not need either: the lag report's rule is one function of the metrics
package."""


def loaded_after(code: str, watched: tuple[str, ...]) -> list[str]:
    """The modules of ``watched`` (or below them) that a fresh interpreter holds after running ``code``."""
    check = (f"{code}\nimport json, sys\n"
             f"print(json.dumps(sorted(m for m in sys.modules if any(m == w or m.startswith(w + '.') for w in "
             f"{watched!r}))))\n")
    result = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, check=True, cwd=REPO,
                            timeout=120)
    loaded: list[str] = json.loads(result.stdout.strip().splitlines()[-1])
    return loaded


def test_the_data_source_module_loads_nothing_heavy() -> None:
    assert loaded_after("import groupcoord.source.data_source", HEAVY) == []


def test_an_executor_unpickles_the_reader_without_the_member_or_delta() -> None:
    reader = GroupcoordStreamReader(parse_source_options({"group.id": "g", "state.root": "/tmp/nowhere",
                                                           "subscribe": "t", "kafka.bootstrap.servers": "h:9092"}))
    pickled = pickle.dumps(reader)
    code = f"import pickle\nreader = pickle.loads({pickled!r})\nassert reader.range_read.bootstrap_servers == 'h:9092'"
    assert loaded_after(code, HEAVY) == []


def test_the_driver_side_loads_no_metrics_endpoint() -> None:
    assert loaded_after("import groupcoord.source.query_plan", ENDPOINT) == []
