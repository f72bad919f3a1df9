"""Shared fixtures: one session-scoped SparkSession for the whole test run."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """``local[4,4]`` (4 slots, task retries), UI off, 2 shuffle partitions, UTC. Built once per test session."""
    from groupcoord.spark.session import local_session

    session = local_session(master="local[4,4]", app_name="groupcoord-tests",
                            extra={"spark.default.parallelism": "4"})
    yield session
    session.stop()
