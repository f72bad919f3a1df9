"""Fixtures of the core tests: the record log every test persists to, and the test context around it.

``record_log`` runs every test twice: on the in-memory log and on the Delta log (delta-rs, in ``tmp_path``), so the
coordinator's behaviour is proven against both.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from groupcoord.log.base import RecordLog
from groupcoord.log.delta import DeltaRecordLog
from groupcoord.log.memory import InMemoryRecordLog

from .context import CoordinatorTestContext


@pytest.fixture(params=["memory", "delta"])
def record_log(request: pytest.FixtureRequest, tmp_path: Path) -> RecordLog:
    """A fresh record log of each kind."""
    if request.param == "delta":
        return DeltaRecordLog(tmp_path / "log")
    return InMemoryRecordLog()


@pytest.fixture
def ctx(record_log: RecordLog) -> CoordinatorTestContext:
    """A coordinator on a manual clock at t=0, persisting to ``record_log``, with no initial rebalance delay."""
    return CoordinatorTestContext(record_log)
