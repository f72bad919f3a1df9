"""Fixtures of the fuzz tests: the in-process fuzz target, and the wire fixtures of tests/server for socket runs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench.fuzz import seed_frames
from bench.fuzz_target import FuzzTarget
from tests.server.conftest import coordinator_stack, raw_client, start_endpoint

__all__ = ["coordinator_stack", "fuzz_target", "raw_client", "seeds", "start_endpoint"]


@pytest.fixture(scope="module")
def fuzz_target() -> Iterator[FuzzTarget]:
    """One target per module: its core keeps the state that earlier examples built, as a long-lived server does."""
    target = FuzzTarget()
    yield target
    target.close()


@pytest.fixture(scope="module")
def seeds() -> list[bytes]:
    """Valid frames of every served API at its lowest and highest advertised version."""
    return seed_frames()
