"""Fixtures of the core tests: the record log every test persists to, and the test context around it.

``record_log`` is the in-memory log; the same suite can be parametrized with the Delta log by overriding it.
"""

from __future__ import annotations

import pytest

from groupcoord.log.base import RecordLog
from groupcoord.log.memory import InMemoryRecordLog

from .context import CoordinatorTestContext


@pytest.fixture
def record_log() -> RecordLog:
    """A fresh record log."""
    return InMemoryRecordLog()


@pytest.fixture
def ctx(record_log: RecordLog) -> CoordinatorTestContext:
    """A coordinator on a manual clock at t=0, persisting to ``record_log``, with no initial rebalance delay."""
    return CoordinatorTestContext(record_log)
