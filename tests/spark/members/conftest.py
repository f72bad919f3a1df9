"""Fixtures of the Spark-members tests: a state root with a topic, and fast coordinator settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from groupcoord.config import Config, resolve_config
from groupcoord.state_root import StateRoot
from groupcoord.topics import TopicCatalog

TOPIC = "events"
PARTITIONS = 6

FAST_CONF = {
    "spark.groupcoord.listen": "127.0.0.1:0",
    "spark.groupcoord.group.min.session.timeout.ms": "500",
    "spark.groupcoord.group.initial.rebalance.delay.ms": "0",
    "spark.groupcoord.state.materialize.interval.ms": "50",
    "spark.groupcoord.member.retry.backoff.ms": "20",
    "spark.groupcoord.member.retry.backoff.max.ms": "200",
    "spark.groupcoord.member.request.timeout.ms": "5000",
}
"""Coordinator and member settings that keep these tests short: no initial rebalance delay, short
backoffs. The lease keeps its defaults: a driver busy with Spark jobs must still renew it in time."""


@pytest.fixture
def root(tmp_path: Path) -> StateRoot:
    """A fresh state root holding one 6-partition topic."""
    state_root = StateRoot.open(tmp_path / "root", create=True)
    TopicCatalog(state_root).create(TOPIC, PARTITIONS)
    return state_root


@pytest.fixture
def fast_config() -> Config:
    """Resolved configuration with :data:`FAST_CONF` applied."""
    return resolve_config(spark_conf=FAST_CONF)
