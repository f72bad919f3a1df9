"""Fixtures of the state tests: a fresh state root, and the real core logging into it."""

from __future__ import annotations

from pathlib import Path

import pytest

from groupcoord.state_root import StateRoot

from .scenario import LoggedCoordinator


@pytest.fixture
def root(tmp_path: Path) -> StateRoot:
    """A new, empty state root."""
    return StateRoot.open(tmp_path / "root", create=True)


@pytest.fixture
def coordinator(root: StateRoot) -> LoggedCoordinator:
    """The core on a manual clock, logging to an in-memory log, with a materializer on ``root`` (epoch 1)."""
    return LoggedCoordinator(root)
