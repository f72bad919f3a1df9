"""Fixtures of the host tests: real ``groupcoord serve`` processes on 127.0.0.1 over one state root."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kafka.protocol.consumer import OffsetCommitRequest, OffsetFetchRequest

from groupcoord.cli.serve import STOP_DEADLINE_S
from groupcoord.server.api import BrokerAddress
from groupcoord.state_root import StateRoot
from groupcoord.topics import TopicCatalog
from tests.server.conftest import RawClient

FAST_LEASE = ("--conf", "lease.timeout.ms=3000", "--conf", "lease.renew.interval.ms=500",
              "--conf", "lease.safety.ms=1000")
"""Short lease timings so failover tests finish quickly: takeover at most 3 s + 1 s after the holder dies."""


class ServeProcess:
    """One ``groupcoord serve`` subprocess over the state root ``root`` (a directory or a URI); stdout lines are
    collected by a reader thread."""

    def __init__(self, root: Path | str, *args: str, env: dict[str, str] | None = None, log_path: Path) -> None:
        command = [sys.executable, "-m", "groupcoord", "serve", "--state-root", str(root), "--listen",
                   "127.0.0.1:0", "--no-spark", *FAST_LEASE, *args]
        self.log_path = log_path
        self._stderr = log_path.open("w")
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=self._stderr, text=True,
                                     env={**os.environ, **(env or {})})
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def wait_ready(self, timeout: float = 30.0) -> BrokerAddress:
        """The address from the readiness line; fails the test if it does not come in time."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            pytest.fail(f"serve did not become ready in {timeout} s; stderr:\n{self.stderr()}")
        prefix = "groupcoord coordinator listening on "
        assert line.startswith(prefix), line
        host, _, port = line[len(prefix):].rpartition(":")
        return BrokerAddress(host, int(port))

    def is_ready_within(self, timeout: float) -> bool:
        """True if the readiness line arrives within ``timeout`` seconds (it is then consumed)."""
        try:
            self.lines.get(timeout=timeout)
            return True
        except queue.Empty:
            return False

    def stderr(self) -> str:
        """What the process logged so far."""
        self._stderr.flush()
        return self.log_path.read_text()

    def terminate(self, timeout: float = STOP_DEADLINE_S + 30.0) -> int:
        """SIGTERM and wait for the exit (serve gives its step-down up to ``STOP_DEADLINE_S``, then exits; a loaded
        machine stretches both); returns the exit code."""
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def kill(self) -> None:
        """SIGKILL and reap."""
        self.proc.kill()
        self.proc.wait(10)

    def close(self) -> None:
        """Make sure the process is gone."""
        if self.proc.poll() is None:
            self.kill()
        self._stderr.close()


COMMITTED_TOPICS = {"t": 8, "t1": 1}
"""The topics whose offsets the host tests commit. ``serve`` refuses partitions its catalog lacks (Kafka's
UNKNOWN_TOPIC_OR_PARTITION), so the :func:`serve` fixture creates them in every root it creates."""


def with_committed_topics(root: Path) -> Path:
    """``root``, created with :data:`COMMITTED_TOPICS` in its catalog when it does not exist yet."""
    if not root.exists():
        catalog = TopicCatalog(StateRoot.open(root, create=True))
        for name, partitions in COMMITTED_TOPICS.items():
            catalog.create(name, partitions)
    return root


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., ServeProcess]]:
    """Start ``serve`` processes over ``tmp_path / "root"`` (or ``root=``; a new root gets :data:`COMMITTED_TOPICS`);
    all are killed after the test."""
    started: list[ServeProcess] = []

    def start(*args: str, root: Path | None = None, env: dict[str, str] | None = None) -> ServeProcess:
        process = ServeProcess(with_committed_topics(root or tmp_path / "root"), *args, env=env,
                               log_path=tmp_path / f"serve-{len(started)}.log")
        started.append(process)
        return process

    yield start
    for process in started:
        process.close()


def commit_request(group: str, topic: str, offsets: dict[int, int]) -> OffsetCommitRequest:
    """A simple (generation -1) OffsetCommit v8 of ``offsets`` by partition."""
    partition = OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition
    return OffsetCommitRequest(
        version=8, group_id=group, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
        topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name=topic, partitions=[
            partition(partition_index=p, committed_offset=o, committed_leader_epoch=-1, committed_metadata="")
            for p, o in offsets.items()])])


def commit(client: RawClient, group: str, topic: str, offsets: dict[int, int]) -> bool:
    """Commit and return True if every partition was acknowledged without error."""
    response = client.request(commit_request(group, topic, offsets))
    return all(p.error_code == 0 for t in response.topics for p in t.partitions)


def fetch(address: BrokerAddress, group: str, topic: str, partitions: list[int]) -> dict[int, int]:
    """Committed offsets by partition (-1 where none), through OffsetFetch v7."""
    request = OffsetFetchRequest(version=7, group_id=group, require_stable=False, topics=[
        OffsetFetchRequest.OffsetFetchRequestTopic(name=topic, partition_indexes=partitions)])
    client = RawClient(address)
    try:
        response = client.request(request)
    finally:
        client.close()
    assert response.error_code == 0
    return {p.partition_index: p.committed_offset for t in response.topics for p in t.partitions}


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> float:
    """Poll ``condition`` until true; returns the seconds it took, fails the test after ``timeout``."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)
    return time.monotonic() - started
