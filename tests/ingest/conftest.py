"""Fixtures for the ingestion tests: the member tests' real coordinator (127.0.0.1) and short-timeout members.

The Kafka source tests use the session's real Kafka broker, ``kafka_broker`` (tests/conftest.py).
"""

from __future__ import annotations

from tests.member.conftest import coordinator, members  # noqa: F401  (re-exported fixtures)
