"""``groupcoord serve`` as users run it: readiness, real kafka-python clients, restart, refusals, clean stop."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata

from groupcoord.server.api import BrokerAddress
from groupcoord.state.schema import OFFSETS
from groupcoord.state.views import read_view
from groupcoord.state_root import StateRoot
from tests.host.conftest import ServeProcess

pytestmark = pytest.mark.integration


def _consumer(address: BrokerAddress) -> KafkaConsumer:
    return KafkaConsumer(group_id="g1", bootstrap_servers=f"{address.host}:{address.port}",
                         enable_auto_commit=False, request_timeout_ms=10000)


def test_kafka_python_commit_and_committed_survive_a_restart(
    serve: Callable[..., ServeProcess], tmp_path: Path
) -> None:
    root = tmp_path / "root"
    first = serve(root=root)
    address = first.wait_ready()
    consumer = _consumer(address)
    tp = TopicPartition("t1", 0)
    assert consumer.committed(tp) is None
    consumer.commit({tp: OffsetAndMetadata(42, "meta", -1)})
    assert consumer.committed(tp) == 42
    consumer.close()
    started = time.monotonic()
    assert first.terminate() == 0
    assert time.monotonic() - started < 10, "serve must exit within 10 s of SIGTERM"
    assert "released lease" in first.stderr()
    # The holder materialized the commit into the queryable offsets table.
    offsets = read_view(StateRoot.open(root), OFFSETS).to_pylist()
    assert [(r["group_id"], r["topic"], r["partition"], r["offset"]) for r in offsets] == [("g1", "t1", 0, 42)]

    second = serve(root=root)
    consumer = _consumer(second.wait_ready())
    assert consumer.committed(tp) == 42
    consumer.close()
    assert second.terminate() == 0


def test_ready_line_is_the_only_stdout_and_logs_go_to_stderr(serve: Callable[..., ServeProcess]) -> None:
    process = serve()
    process.wait_ready()
    assert process.terminate() == 0
    assert process.lines.empty()
    assert "serving as" in process.stderr()


def _serve_exit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "groupcoord", "serve", *args], capture_output=True, text=True,
                          timeout=60)


def test_a_directory_that_is_not_a_state_root_exits_2(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    result = _serve_exit("--state-root", str(tmp_path), "--listen", "127.0.0.1:0")
    assert result.returncode == 2
    assert result.stderr.strip().startswith("groupcoord: error:")
    assert "not a groupcoord state root" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_wildcard_listen_without_advertised_listener_exits_2(tmp_path: Path) -> None:
    result = _serve_exit("--state-root", str(tmp_path / "r"), "--listen", "0.0.0.0:0")
    assert result.returncode == 2
    assert "--advertised-listener" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_state_root_on_storage_without_conditional_commits_here_is_refused(tmp_path: Path) -> None:
    result = _serve_exit("--state-root", "gs://bucket/root", "--listen", "127.0.0.1:0")
    assert result.returncode == 2
    assert "unsupported storage scheme gs://" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
