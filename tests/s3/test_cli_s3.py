"""The ``groupcoord`` command on a state root on S3: the endpoint from ``--conf storage.endpoint``, the keys from the
environment, and a secret given as a ``--conf`` value refused without being echoed."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.s3.conftest import S3Server

pytestmark = pytest.mark.integration


def _groupcoord(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    return subprocess.run([sys.executable, "-m", "groupcoord", *args], capture_output=True, text=True, timeout=60,
                          env={**clean, **env})


def test_topics_on_an_s3_root_with_the_endpoint_from_conf(s3_server: S3Server, s3_bucket: str) -> None:
    keys = {k: v for k, v in s3_server.env.items() if k != "AWS_ENDPOINT_URL"}
    root = ("--state-root", f"s3a://{s3_bucket}/root", "--conf", f"storage.endpoint={s3_server.endpoint}")
    created = _groupcoord("topics", "create", "orders", "--partitions", "4", *root, env=keys)
    assert created.returncode == 0, created.stderr
    described = _groupcoord("topics", "describe", "orders", *root, env=keys)
    assert described.returncode == 0, described.stderr
    assert "orders" in described.stdout and "4" in described.stdout


def test_a_secret_in_conf_is_refused_in_one_line_without_its_value(s3_server: S3Server, s3_bucket: str) -> None:
    result = _groupcoord("topics", "create", "orders", "--partitions", "1", "--state-root", f"s3://{s3_bucket}/r",
                         "--conf", "storage.secret.access.key=hunter2", env=s3_server.env)
    assert result.returncode != 0
    assert "is a secret and is refused" in result.stderr and "hunter2" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
