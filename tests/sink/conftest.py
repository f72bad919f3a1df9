"""The sink's tests read from the source: they share its fixtures (``source_root``, ``source_coordinator``,
``source``), defined once in ``tests/source/conftest.py``."""

from __future__ import annotations

from tests.source.conftest import source, source_coordinator, source_root

__all__ = ["source", "source_coordinator", "source_root"]
