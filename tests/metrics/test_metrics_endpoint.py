"""The live metrics endpoint over a real coordinator host, real sockets and real Kafka clients.

A host with ``metrics.listen`` serves a kafka-python producer and a committing consumer; ``/metrics`` is parsed with
``prometheus_client``'s own parser and must show what happened (groups, members, lag with kafka_exporter's names,
request rates, rebalances, commits, the record log, the lease); every metric the Grafana dashboard queries must be
among them; ``/health`` says serving, and a second host of the same root in the same process (its own registry)
stands by and says so.
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer
from prometheus_client.parser import text_string_to_metric_families

from groupcoord.config import Config, ConfigError, resolve_config
from groupcoord.host.background import BackgroundCoordinator
from groupcoord.host.coordinator_host import pick_free_port
from groupcoord.metrics.consumer_lag import LAG, LAG_SUM
from groupcoord.metrics.health import health
from groupcoord.metrics.host_state import HostState, Phase
from groupcoord.state_root import StateRoot
from groupcoord.topics import TopicCatalog

pytestmark = pytest.mark.integration

TOPIC = "orders"
RECORDS = 30
DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana-dashboard.json"

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def _config(metrics_port: int) -> Config:
    return resolve_config(flags={"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 500,
                                 "metrics.listen": f"127.0.0.1:{metrics_port}"})


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def _scrape(address: str) -> Samples:
    status, text = _get(f"http://{address}/metrics")
    assert status == 200, text
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def _value(samples: Samples, name: str, **labels: str) -> float:
    return samples[name, frozenset(labels.items())]


def _settled(samples: Samples) -> bool:
    """The group is Stable (kafka-python rejoins once after its first metadata), with offsets committed and a few
    heartbeats answered."""
    return (samples.get(("groupcoord_groups", frozenset({("type", "classic"), ("state", "Stable")}))) == 1
            and any(name == "kafka_consumergroup_lag" for name, _ in samples)
            and samples.get(("groupcoord_request_seconds_count", frozenset({("api", "Heartbeat")})), 0) >= 1)


class Running:
    """The serving host, its metrics address, and the consumer's committed offsets."""

    def __init__(self, coordinator: BackgroundCoordinator, metrics: str, root: StateRoot) -> None:
        self.coordinator, self.metrics, self.root = coordinator, metrics, root


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """A host of a new root with topic ``orders`` (3 partitions): 30 records produced through it, 20 of them read and
    committed by group ``g1`` (one kafka-python consumer, still a member)."""
    root = StateRoot.open(tmp_path_factory.mktemp("metrics") / "root", create=True)
    TopicCatalog(root).create(TOPIC, 3)
    port = pick_free_port("127.0.0.1")
    with BackgroundCoordinator(root, _config(port), listen="127.0.0.1:0") as coordinator:
        assert coordinator.address is not None
        producer = KafkaProducer(bootstrap_servers=coordinator.address)
        for i in range(RECORDS):
            producer.send(TOPIC, f"v{i}".encode(), partition=i % 3)
        producer.close()
        consumer = KafkaConsumer(bootstrap_servers=coordinator.address, group_id="g1",
                                 auto_offset_reset="earliest", enable_auto_commit=False, max_poll_records=7,
                                 heartbeat_interval_ms=100, session_timeout_ms=6000)
        # Metadata before the subscription: a leader that assigns before it knows the topic assigns nothing and
        # rejoins, and kafka-python 3.0.12 was seen to wedge after such a rejoin (tests/s3/test_serve_s3.py).
        assert consumer.partitions_for_topic(TOPIC) == {0, 1, 2}
        consumer.subscribe([TOPIC])
        metrics = f"127.0.0.1:{port}"
        try:
            read, deadline = 0, time.monotonic() + 90  # generous: this machine's load average reaches 18
            while time.monotonic() < deadline:
                read += sum(len(batch) for batch in consumer.poll(200).values())
                if read:
                    consumer.commit()
                if read >= 20 and _settled(_scrape(metrics)):
                    break
            else:
                pytest.fail(f"the consumer read {read} records and its group did not settle in time")
            yield Running(coordinator, metrics, root)
        finally:
            consumer.close()


def test_metrics_show_groups_lag_requests_rebalances_and_storage(running: Running) -> None:
    samples = _scrape(running.metrics)
    assert _value(samples, "groupcoord_serving") == 1
    assert _value(samples, "groupcoord_lease_epoch") == 1
    assert _value(samples, "groupcoord_groups", type="classic", state="Stable") == 1
    assert _value(samples, "groupcoord_groups", type="consumer", state="Stable") == 0
    assert _value(samples, "groupcoord_members", type="classic") == 1
    assert _value(samples, "kafka_consumergroup_members", consumergroup="g1") == 1
    committed = {p: _value(samples, "kafka_consumergroup_current_offset", consumergroup="g1", topic=TOPIC,
                           partition=str(p)) for p in range(3)}
    lags = {p: _value(samples, LAG, consumergroup="g1", topic=TOPIC, partition=str(p)) for p in range(3)}
    assert all(committed[p] + lags[p] == RECORDS // 3 for p in range(3)), (committed, lags)
    assert _value(samples, LAG_SUM, consumergroup="g1", topic=TOPIC) == sum(lags.values())
    for api in ("JoinGroup", "SyncGroup", "Heartbeat", "OffsetCommit", "Produce", "Fetch"):
        assert _value(samples, "groupcoord_request_seconds_count", api=api) >= 1, api
    assert _value(samples, "groupcoord_rebalance_seconds_count", type="classic") >= 1
    assert _value(samples, "groupcoord_offset_commits_total", type="classic") >= 3
    assert _value(samples, "groupcoord_record_log_version") >= 1
    assert _value(samples, "groupcoord_record_log_bytes") > 0
    assert _value(samples, "groupcoord_delta_commit_seconds_count", table="record_log") >= 1
    assert _value(samples, "groupcoord_delta_commits_total", table="topics") >= 1
    assert _value(samples, "groupcoord_authentication_failures_total") == 0


def test_every_metric_the_dashboard_queries_is_exposed(running: Running) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel.get("targets", [])]
    assert len(exprs) >= 20
    queried = {name for expr in exprs for name in re.findall(r"\b(?:groupcoord|kafka)_[a-z_]+\b", expr)}
    exposed = {name for name, _ in _scrape(running.metrics)}
    assert queried - exposed == set()


def test_health_says_serving_and_a_second_host_in_the_process_stands_by(running: Running) -> None:
    status, body = _get(f"http://{running.metrics}/health")
    health = json.loads(body)
    assert (status, health["status"], health["healthy"]) == (200, "serving", True)
    assert health["lease"]["epoch"] == 1 and health["lease"]["expires_in_seconds"] > 0
    assert health["record_log"]["version"] >= 1 and health["record_log"]["last_commit_age_seconds"] >= 0
    assert set(health["materializer"]) == {"log_version", "materialized_version", "pending_batches", "lag_seconds"}
    assert _get(f"http://{running.metrics}/nothing")[0] == 404

    port = pick_free_port("127.0.0.1")
    standby = BackgroundCoordinator(running.root, _config(port), listen="127.0.0.1:0")
    try:
        assert standby.start_or_stand_by(30.0) is None
        status, body = _get(f"http://127.0.0.1:{port}/health")
        health = json.loads(body)
        assert (status, health["status"], health["lease"]["epoch"]) == (200, "standing_by", 1)
        assert health["lease"]["address"] == running.coordinator.address
        samples = _scrape(f"127.0.0.1:{port}")
        assert _value(samples, "groupcoord_serving") == 0
        assert ("groupcoord_groups", frozenset({("type", "classic"), ("state", "Stable")})) not in samples
    finally:
        standby.stop()
    assert _value(_scrape(running.metrics), "groupcoord_serving") == 1  # the registries are the hosts' own


def test_a_malformed_metrics_listen_is_refused_with_the_key_named() -> None:
    with pytest.raises(ConfigError, match=r"metrics\.listen"):
        resolve_config(flags={"metrics.listen": "localhost"})


def test_a_metrics_port_in_use_leaves_the_coordinator_serving_without_metrics(
        running: Running, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    root = StateRoot.open(tmp_path / "other", create=True)
    port = int(running.metrics.rpartition(":")[2])
    with caplog.at_level("ERROR", logger="groupcoord.host"), \
            BackgroundCoordinator(root, _config(port), listen="127.0.0.1:0") as other:
        assert other.serving and other.host.metrics_server is None
    assert f"cannot serve metrics on 127.0.0.1:{port}" in caplog.text


def test_health_is_unhealthy_while_starting_and_once_stopped() -> None:
    host = HostState("h-1", lease_table=None)
    assert health(host) == {"status": "starting", "healthy": False, "holder_id": "h-1", "lease": None}
    host.leave(Phase.STOPPED)
    assert (health(host)["status"], health(host)["healthy"]) == ("stopped", False)
