"""Fixtures of the storage tests: the same contract runs against the in-memory and the Delta record log."""

from __future__ import annotations

from pathlib import Path

import pytest

from groupcoord.log.delta import DeltaRecordLog
from groupcoord.log.memory import InMemoryRecordLog
from tests.log.storage_helpers import LogFactory


@pytest.fixture(params=["memory", "delta"])
def log_factory(request: pytest.FixtureRequest, tmp_path: Path) -> LogFactory:
    """Builds handles on ONE log: the memory log is shared, each Delta handle is a fresh reader of the same table."""
    if request.param == "memory":
        shared = InMemoryRecordLog()
        return lambda: shared
    return lambda: DeltaRecordLog(tmp_path / "log")
