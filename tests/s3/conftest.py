"""A real S3 server for the tests: versitygw (``make install`` builds it into the venv) on 127.0.0.1, with its posix
backend in a temporary directory, one per test session (per worker), stopped when the session ends.

Each test gets a bucket of its own (:func:`s3_bucket`) and the ``AWS_*`` variables that reach the server
(:func:`s3_env`), as a user's process would have them.
"""

from __future__ import annotations

import itertools
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow.fs as pa_fs
import pytest

VERSITYGW = Path(sys.executable).parent / "versitygw"
ACCESS_KEY = "groupcoord-test"
SECRET_KEY = "groupcoord-test-secret"
REGION = "us-east-1"
START_TIMEOUT_S = 20.0

_buckets = itertools.count()


@dataclass(frozen=True)
class S3Server:
    """A running S3 server: its endpoint, its root user's keys, and the directory its posix backend writes to."""

    endpoint: str
    backend: Path

    @property
    def env(self) -> dict[str, str]:
        """The ``AWS_*`` variables a client of this server needs."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
                "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": REGION}

    def create_bucket(self, name: str) -> str:
        """Create the bucket ``name`` through the S3 API (CreateBucket); returns the name."""
        host = self.endpoint.removeprefix("http://")
        fs = pa_fs.S3FileSystem(access_key=ACCESS_KEY, secret_key=SECRET_KEY, region=REGION, scheme="http",
                                endpoint_override=host, allow_bucket_creation=True)
        fs.create_dir(name)
        return name


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_listening(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"versitygw exited with {process.returncode}:\n{log.read_text()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    pytest.fail(f"versitygw did not listen on {port} within {START_TIMEOUT_S} s:\n{log.read_text()}")


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """versitygw on 127.0.0.1 with its posix backend in a temporary directory, for the whole session."""
    if not VERSITYGW.is_file():
        pytest.fail(f"{VERSITYGW} is missing: `make install` builds it (Go)")
    backend = tmp_path_factory.mktemp("versitygw")
    log = backend.parent / f"{backend.name}.log"
    port = _free_port()
    with log.open("wb") as output:
        process = subprocess.Popen(
            [str(VERSITYGW), "--access", ACCESS_KEY, "--secret", SECRET_KEY, "--region", REGION,
             "--port", f"127.0.0.1:{port}", "--quiet", "posix", str(backend)],
            stdout=output, stderr=subprocess.STDOUT)
    try:
        _wait_listening(port, process, log)
        yield S3Server(f"http://127.0.0.1:{port}", backend)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


@pytest.fixture
def s3_bucket(s3_server: S3Server, request: pytest.FixtureRequest) -> str:
    """A new, empty bucket named after the test."""
    stem = re.sub(r"[^a-z0-9-]+", "-", request.node.name.lower()).strip("-")[:40].strip("-")
    return s3_server.create_bucket(f"{stem}-{next(_buckets)}")


@pytest.fixture
def s3_env(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The server's ``AWS_*`` variables, set in this process's environment for the test."""
    for name, value in s3_server.env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_S3_ALLOW_UNSAFE_RENAME", raising=False)
    return s3_server.env
