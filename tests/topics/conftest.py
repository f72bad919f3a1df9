"""Fixtures for the topic tests: a fresh state root and its catalog, and a check that nothing was written."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pytest

from groupcoord.state_root import StateRoot
from groupcoord.topics import TopicCatalog, TopicsConfig


@pytest.fixture
def root(tmp_path: Path) -> StateRoot:
    """A new, empty state root."""
    return StateRoot.open(tmp_path / "root", create=True)


@pytest.fixture
def catalog(root: StateRoot) -> TopicCatalog:
    """The catalog of :func:`root`, with a short commit backoff."""
    return TopicCatalog(root, config=TopicsConfig(commit_backoff_ms=1, commit_timeout_ms=30000))


def _files(path: Path) -> dict[str, int]:
    if not path.exists():
        return {}
    return {str(p.relative_to(path)): p.stat().st_size for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.fixture
def unchanged() -> Callable[[Path], AbstractContextManager[None]]:
    """``with unchanged(path): ...`` asserts that no file under ``path`` appeared, vanished or changed size."""

    @contextmanager
    def check(path: Path) -> Iterator[None]:
        before = _files(path)
        existed = path.exists()
        yield
        assert path.exists() == existed
        assert _files(path) == before

    return check
