"""Fixtures for the ingestion tests: the member tests' real coordinator (127.0.0.1) and short-timeout members."""

from __future__ import annotations

from tests.member.conftest import coordinator, members  # noqa: F401  (re-exported fixtures)
