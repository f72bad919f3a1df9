"""Fixtures of the streaming tests (the source's: ``source_root``, ``source_coordinator``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from groupcoord.config import resolve_config
from groupcoord.host.background import BackgroundCoordinator
from groupcoord.state_root import StateRoot
from tests.spark.streaming.source_helpers import FAST_CONF


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
