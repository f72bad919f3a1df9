"""A coordinator failover in the middle of a consumer group's reconciliation (KIP-848), with librdkafka.

Consumer a owns every partition; b joins, and while a is still revoking what moves to b, the coordinator dies:

- on ``serve``, the holder is killed with SIGKILL and the standby on the same state root takes the lease over (after
  the lease expires), with every member's epoch and assignment from the record log;
- on the Kafka broker (``GROUPCOORD_CLIENTS_ORACLE=kafka``), the one broker is killed with SIGKILL and started again
  on the same port and log directory: a one-broker cluster has no other coordinator to fail over to.

Both consumers carry on polling; the group must settle with each partition owned by exactly one of them, and a
commit made after the failover must read back.

The group is observed after the failover by a new admin client, as a user's next ``kafka-consumer-groups`` call
would: librdkafka's admin client caches each group's coordinator, and when that broker is dead (not answering
NOT_COORDINATOR) its requests wait on the dead broker's connection until they time out, for as long as 100 s under
load. That is the client's cache, whichever server it talks to (docs/compatibility.md, "Failover").
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import confluent_kafka
import pytest

from groupcoord.devbroker import TEST_JVM_OPTIONS, KafkaBroker
from groupcoord.devbroker.broker import free_port
from tests.clients.confluent_client import ConfluentClient
from tests.clients.conftest import (
    BROKER_SETTINGS,
    ORACLE_ENV,
    broker_records,
    scenario_root,
    serve_settings,
)
from tests.clients.scenarios import (
    PARTITIONS,
    SETTLE_S,
    TOPIC,
    owns_everything,
    split_evenly,
    wait_for,
)
from tests.host.conftest import ServeProcess

pytestmark = [pytest.mark.integration, pytest.mark.slow]

@dataclass
class FailoverTarget:
    """Where the consumers bootstrap, and how the coordinator under them fails over."""

    bootstrap: str
    fail_over: Callable[[], None]


@pytest.fixture
def failover_target(tmp_path: Path) -> Iterator[FailoverTarget]:
    """``serve`` with a standby on the same state root, or the Kafka broker (see the module)."""
    if os.environ.get(ORACLE_ENV) == "kafka":
        port = free_port("127.0.0.1")
        brokers = [KafkaBroker.start(tmp_path / "kafka", listen=f"127.0.0.1:{port}", properties=BROKER_SETTINGS,
                                     jvm_options=TEST_JVM_OPTIONS)]
        brokers[0].create_topic(TOPIC, PARTITIONS)
        brokers[0].produce(TOPIC, broker_records())

        def restart_broker() -> None:
            brokers[0].process.kill()
            brokers[0].process.wait()
            brokers.append(KafkaBroker.start(tmp_path / "kafka", listen=f"127.0.0.1:{port}",
                                             properties=BROKER_SETTINGS, jvm_options=TEST_JVM_OPTIONS))

        try:
            yield FailoverTarget(brokers[0].bootstrap, restart_broker)
        finally:
            for broker in brokers:
                broker.stop()
        return
    root = scenario_root(tmp_path / "root")
    ports = [free_port("127.0.0.1") for _ in range(2)]
    holder = ServeProcess(root, *serve_settings(), "--listen", f"127.0.0.1:{ports[0]}",
                          log_path=tmp_path / "holder.log")
    holder.wait_ready(60)
    standby = ServeProcess(root, *serve_settings(), "--listen", f"127.0.0.1:{ports[1]}",
                           log_path=tmp_path / "standby.log")

    def take_over() -> None:
        holder.kill()
        standby.wait_ready(60)

    try:
        yield FailoverTarget(",".join(f"127.0.0.1:{port}" for port in ports), take_over)
    finally:
        holder.close()
        standby.close()


def _state(client: ConfluentClient, group: str) -> str | None:
    """The group's state, or ``None`` while the admin client's request fails (the new coordinator is not up yet)."""
    try:
        return client.describe(group).state
    except confluent_kafka.KafkaException:
        return None


def test_a_coordinator_failover_in_the_middle_of_a_reconciliation(failover_target: FailoverTarget) -> None:
    client = ConfluentClient(failover_target.bootstrap, group_protocol="consumer")
    observers: list[ConfluentClient] = []
    group = "consumer-protocol-failover"
    try:
        a = client.join(group, "a")
        wait_for(lambda: owns_everything(a), "a to own every partition")
        b = client.join(group, "b")
        # The coordinator has b (its join moved the target) while a still owns what moves: mid-reconciliation.
        wait_for(lambda: len(client.describe(group).members) == 2 and not split_evenly(a, b),
                 "b's join to start a reconciliation")
        failover_target.fail_over()
        wait_for(lambda: split_evenly(a, b), "a and b to split the partitions under the new coordinator")
        observer = ConfluentClient(failover_target.bootstrap, group_protocol="consumer")
        observers.append(observer)
        wait_for(lambda: _state(observer, group) == "Stable", "the group to be stable again")
        assert split_evenly(a, b)
        assert a.commit({p: 3 for p in a.assignment()}) is None
        assert all(observer.group_offsets(group).get(p) == 3 for p in a.assignment())
        shares = a.assignment(), b.assignment()
        time.sleep(SETTLE_S)
        assert (a.assignment(), b.assignment()) == shares, "the group moved partitions again once settled"
    finally:
        for each in (client, *observers):
            each.close()
