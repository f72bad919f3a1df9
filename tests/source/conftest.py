"""Fixtures of the streaming tests: ``source_root`` and ``source_coordinator`` (the source's, without Spark), and
``source`` (a state root registered in the session, on the embedded log and on the session's Kafka broker)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from groupcoord.config import resolve_config
from groupcoord.host.background import BackgroundCoordinator
from groupcoord.state_root import StateRoot
from tests.sink.sink_helpers import Source, register_root
from tests.source.source_helpers import FAST_CONF


@pytest.fixture
def source_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> StateRoot:
    """A fresh state root; the queries' ownership fences live under the test's directory."""
    monkeypatch.setenv("GROUPCOORD_STREAMING_FENCES_DIR", str(tmp_path / "fences"))
    return StateRoot.open(tmp_path / "root", create=True)


@pytest.fixture
def source_coordinator(source_root: StateRoot) -> Iterator[BackgroundCoordinator]:
    """The state root's coordinator, without Spark (client-side assignors only)."""
    with BackgroundCoordinator(source_root, resolve_config(spark_conf=FAST_CONF)) as running:
        yield running


@pytest.fixture(params=["embedded", pytest.param("kafka", marks=pytest.mark.kafka)])
def source(request: pytest.FixtureRequest, spark: SparkSession, tmp_path: Path) -> Iterator[Source]:
    """A fresh state root registered in the session, with records from the embedded log or the Kafka broker; its
    coordinator stops with the test (not at the interpreter's exit, when its thread can no longer step down)."""
    from groupcoord.spark.registration import stop_coordinators

    root = StateRoot.open(tmp_path / "state", create=True)
    broker = request.getfixturevalue("kafka_broker") if request.param == "kafka" else None
    register_root(spark, root)
    try:
        yield Source(root, broker)
    finally:
        stop_coordinators()
