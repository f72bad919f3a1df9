"""versitygw, the S3 server of the tests and benchmarks, started on 127.0.0.1 with its posix backend in a directory.

``make install`` builds it into the venv's ``bin`` (Go). Its posix backend re-checks ``If-None-Match: *`` under a
publish lock, so conditional puts are atomic (``tests/s3/test_put_if_absent_race.py`` checks it).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Self

import pyarrow.fs as pa_fs

VERSITYGW = Path(sys.executable).parent / "versitygw"
ACCESS_KEY = "groupcoord-test"
SECRET_KEY = "groupcoord-test-secret"
REGION = "us-east-1"
START_TIMEOUT_S = 20.0


class S3ServerError(Exception):
    """versitygw is missing or did not start; the message says why (with its output)."""


@dataclass(frozen=True)
class S3Server:
    """A running S3 server: its endpoint, and the directory its posix backend writes to."""

    endpoint: str
    backend: Path

    @property
    def port(self) -> int:
        """The port it listens on (127.0.0.1)."""
        return int(self.endpoint.rpartition(":")[2])

    @property
    def env(self) -> dict[str, str]:
        """The ``AWS_*`` variables a client of this server needs."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
                "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": REGION}

    def create_bucket(self, name: str) -> str:
        """Create the bucket ``name`` through the S3 API (CreateBucket); returns the name."""
        fs = pa_fs.S3FileSystem(access_key=ACCESS_KEY, secret_key=SECRET_KEY, region=REGION, scheme="http",
                                endpoint_override=self.endpoint.removeprefix("http://"),
                                allow_bucket_creation=True)
        fs.create_dir(name)
        return name


@contextmanager
def versitygw(backend: Path) -> Iterator[S3Server]:
    """Run versitygw over the posix directory ``backend`` (its log beside it) until the block ends."""
    with RestartableVersitygw(backend) as running:
        yield running.server


class RestartableVersitygw:
    """versitygw over the posix directory ``backend`` on a fixed port of 127.0.0.1, which :meth:`restart` stops and
    starts again on the same port and data (a storage outage of the cluster drills: requests fail while it is down,
    then succeed). :meth:`start` (or ``with``) runs it; :attr:`server` is its address."""

    def __init__(self, backend: Path, *, down_s: float = 0.0) -> None:
        if not VERSITYGW.is_file():
            raise S3ServerError(f"{VERSITYGW} is missing: `make install` builds it (Go)")
        self.backend = backend
        self.down_s = down_s
        """How long :meth:`restart` keeps the server down (connections refused) before starting it again."""
        self.port = _free_port()
        self.server = S3Server(f"http://127.0.0.1:{self.port}", backend)
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start the server and wait until it listens."""
        self.backend.mkdir(parents=True, exist_ok=True)
        log = self.backend.parent / f"{self.backend.name}.log"
        with log.open("ab") as output:
            self._process = subprocess.Popen(
                [str(VERSITYGW), "--access", ACCESS_KEY, "--secret", SECRET_KEY, "--region", REGION,
                 "--port", f"127.0.0.1:{self.port}", "--quiet", "posix", str(self.backend)],
                stdout=output, stderr=subprocess.STDOUT)
        _wait_listening(self.port, self._process, log)

    def stop(self, *, kill: bool = False) -> None:
        """Stop the server: SIGTERM, then SIGKILL after 10 s; with ``kill``, SIGKILL at once (a crash: a graceful
        stop waits for the open connections, which took tens of seconds under load)."""
        process, self._process = self._process, None
        if process is None:
            return
        if kill:
            process.kill()
        else:
            process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)

    def restart(self) -> None:
        """Kill the server (:meth:`stop` with ``kill``), keep it down :attr:`down_s`, and start it again on the same
        port and data."""
        self.stop(kill=True)
        time.sleep(self.down_s)
        self.start()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_listening(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise S3ServerError(f"versitygw exited with {process.returncode}:\n{log.read_text()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise S3ServerError(f"versitygw did not listen on {port} within {START_TIMEOUT_S} s:\n{log.read_text()}")
