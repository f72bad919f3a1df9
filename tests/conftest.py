"""Shared fixtures: one session-scoped SparkSession and one real Kafka broker for the whole test run.

Hypothesis runs *derandomized* by default: every run of ``make test`` (CI's too) draws the same examples, so a
property test fails the same way each time or not at all. ``GROUPCOORD_HYPOTHESIS=explore make test`` draws fresh
random examples (and remembers failures in ``.hypothesis/``); put what it finds into a named test.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings

settings.register_profile("deterministic", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("GROUPCOORD_HYPOTHESIS", "deterministic"))

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from groupcoord.devbroker import KafkaBroker


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """``local[4,4]`` (4 slots, task retries), UI off, 2 shuffle partitions, UTC. Built once per test session."""
    from groupcoord.spark.session import local_session

    session = local_session(master="local[4,4]", app_name="groupcoord-tests",
                            extra={"spark.default.parallelism": "4"})
    yield session
    session.stop()


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    """A real Apache Kafka broker (KRaft, single node) on 127.0.0.1, started once per test session.

    Tests that use it carry the ``kafka`` marker. They share it, so each creates topics (and groups) of its own names;
    ``kafka_broker.bootstrap`` is the ``HOST:PORT`` to connect to. Its log is under the session's temporary directory.
    Its JVM runs without the C2 compiler (``TEST_JVM_OPTIONS``): it starts faster and leaves the cores to the tests.
    """
    from groupcoord.devbroker import TEST_JVM_OPTIONS, KafkaBroker

    with KafkaBroker.start(tmp_path_factory.mktemp("kafka-broker"), jvm_options=TEST_JVM_OPTIONS) as broker:
        yield broker
