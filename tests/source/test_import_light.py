"""The source's and the sink's modules that every Python worker of a query imports stay import-light (issue 29's
cold start).

Spark imports :mod:`groupcoord.source.data_source` in each of a query's Python workers: to unpickle the source (its
planner workers, and each executor worker with the reader, before its first task), and in the driver-side worker
that plans the batches; likewise :mod:`groupcoord.sink.data_sink` with the sink's writer. The member (with the
coordinator's modules below it), delta-rs, kafka-python, the runtime and the metrics endpoint cost seconds of a
loaded CPU in each (14-16 s at load 20, with eight workers starting together); only the driver-side workers need
the first three, and nothing of the source needs the last two. Each check runs in a fresh interpreter and reads its
``sys.modules``.
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow as pa

from groupcoord.runtime import crash_points
from groupcoord.sink import data_sink
from groupcoord.sink.options import SinkOptions
from groupcoord.source.data_source import GroupcoordSource
from groupcoord.source.options import parse_source_options

REPO = Path(__file__).resolve().parents[2]

HEAVY = ("groupcoord.member", "groupcoord.coordinator", "groupcoord.log", "groupcoord.topics", "groupcoord.metrics",
         "groupcoord.source.query_plan", "groupcoord.source.query_member", "groupcoord.source.log_view", "deltalake",
         "kafka", "confluent_kafka", "prometheus_client")
"""What neither the planner workers nor the executors need of the source."""

SINK_HEAVY = ("groupcoord.member", "groupcoord.coordinator", "groupcoord.runtime", "groupcoord.log",
              "groupcoord.topics", "groupcoord.metrics", "groupcoord.source", "groupcoord.sink.commit",
              "groupcoord.sink.group", "kafka", "confluent_kafka")
"""What an executor writing the ``groupcoord-delta`` sink does not need (the driver's commit does)."""

OPTIONS = {"group.id": "g", "state.root": "/tmp/nowhere", "subscribe": "t", "kafka.bootstrap.servers": "h:9092"}

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


def test_an_executor_unpickles_the_source_and_its_reader_without_the_member_or_delta() -> None:
    source = GroupcoordSource(OPTIONS)
    reader = source.streamReader(source.schema())
    pickled = pickle.dumps((source, reader))
    code = (f"import pickle\nsource, reader = pickle.loads({pickled!r})\n"
            "assert reader.range_read.bootstrap_servers == 'h:9092' and source.name() == 'groupcoord'")
    assert loaded_after(code, HEAVY) == []


def test_an_unpickled_source_parses_its_options_again() -> None:
    source = pickle.loads(pickle.dumps(GroupcoordSource({**OPTIONS, "maxOffsetsPerTrigger": "7"})))
    assert source.source_options == parse_source_options({**OPTIONS, "maxOffsetsPerTrigger": "7"})
    assert source.source_options.max_offsets_per_trigger == 7


def test_the_driver_side_loads_no_metrics_endpoint() -> None:
    assert loaded_after("import groupcoord.source.query_plan", ENDPOINT) == []


def test_an_executor_unpickles_the_sink_writer_without_the_commit_side() -> None:
    options = SinkOptions.parse({"path": "/tmp/nowhere/table", "group.id": "g", "checkpointLocation": "/tmp/nowhere",
                                 "state.root": "/tmp/nowhere/state"}, {})
    pickled = pickle.dumps(data_sink.DeltaStreamWriter(options, pa.schema([("value", pa.binary())])))
    code = f"import pickle\nwriter = pickle.loads({pickled!r})\nassert writer.options.group_id == 'g'"
    assert loaded_after(code, SINK_HEAVY) == []


def test_the_sink_names_the_crash_point_variable_of_the_runtime() -> None:
    assert data_sink.CRASH_AT_ENV == crash_points.ENV


def test_an_armed_sink_crash_point_still_kills_the_worker() -> None:
    code = "from groupcoord.sink.data_sink import crash_point\ncrash_point('sink-write')\nprint('alive')"
    armed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120,
                           env={**os.environ, crash_points.ENV: "sink-write"})
    assert armed.returncode == -signal.SIGKILL and "alive" not in armed.stdout
