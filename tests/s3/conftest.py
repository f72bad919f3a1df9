"""A real S3 server for the tests: versitygw (``make install`` builds it into the venv) on 127.0.0.1, with its posix
backend in a temporary directory, one per test session (per worker), stopped when the session ends
(:mod:`bench.s3_server` starts it, for the benchmarks too).

Each test gets a bucket of its own (:func:`s3_bucket`) and the ``AWS_*`` variables that reach the server
(:func:`s3_env`), as a user's process would have them.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

import pytest

from bench.s3_server import SECRET_KEY, S3Server, S3ServerError, versitygw

__all__ = ["SECRET_KEY", "S3Server"]

_buckets = itertools.count()


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """versitygw on 127.0.0.1 with its posix backend in a temporary directory, for the whole session."""
    try:
        with versitygw(tmp_path_factory.mktemp("versitygw")) as server:
            yield server
    except S3ServerError as exc:
        pytest.fail(str(exc))


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
