"""BackgroundCoordinator: a coordinator host in a daemon thread, as the driver, the CLI and tests run it.

Its Spark-backed assignment is exercised through ``run_members`` (test_run_members.py)."""

from __future__ import annotations

import time

import pytest
from kafka.structs import TopicPartition

from groupcoord.config import Config
from groupcoord.host.background import BackgroundCoordinator, CoordinatorStartError
from groupcoord.log.lease import current_holder
from groupcoord.member import GroupMember, MemberOptions
from groupcoord.state_root import StateRoot
from tests.narrowing import present
from tests.spark.members.conftest import PARTITIONS, TOPIC

OPTIONS = MemberOptions(retry_backoff_ms=20, retry_backoff_max_ms=200, request_timeout_ms=5000)


def _member(root: StateRoot, *, assignors: tuple[str, ...]) -> GroupMember:
    return GroupMember("g", topics=[TOPIC], state_root=root.path, session_timeout_ms=3000,
                       heartbeat_interval_ms=200, rebalance_timeout_ms=5000, assignors=assignors, options=OPTIONS)


def test_start_serves_the_lease_address_and_stop_releases_the_lease(root: StateRoot, fast_config: Config) -> None:
    coordinator = BackgroundCoordinator(root, fast_config)
    address = coordinator.start(timeout_s=30)
    try:
        lease = current_holder(root)
        assert lease is not None and lease.live and lease.address == address
        assert coordinator.serving and coordinator.address == address
        member = _member(root, assignors=("range",))
        try:
            assert member.poll(10_000) == {TopicPartition(TOPIC, p) for p in range(PARTITIONS)}
            member.commit_sync({TopicPartition(TOPIC, 0): 42})
            assert present(member.committed([TopicPartition(TOPIC, 0)])[TopicPartition(TOPIC, 0)]).offset == 42
        finally:
            member.close()
    finally:
        coordinator.stop()
    released = current_holder(root)
    assert released is not None and not released.live
    assert coordinator.address is None and not coordinator.serving
    coordinator.stop()  # a second stop is harmless


def test_committed_offsets_survive_a_second_background_coordinator(root: StateRoot, fast_config: Config) -> None:
    with BackgroundCoordinator(root, fast_config):
        member = _member(root, assignors=("range",))
        member.poll(10_000)
        member.commit_sync({TopicPartition(TOPIC, 3): 7})
        member.close()
    with BackgroundCoordinator(root, fast_config):
        reader = _member(root, assignors=("range",))
        try:
            assert present(reader.committed([TopicPartition(TOPIC, 3)])[TopicPartition(TOPIC, 3)]).offset == 7
        finally:
            reader.close()


def test_start_fails_clearly_while_another_process_holds_the_lease(root: StateRoot, fast_config: Config) -> None:
    with BackgroundCoordinator(root, fast_config, holder_id="first") as first:
        second = BackgroundCoordinator(root, fast_config, holder_id="second")
        started = time.monotonic()
        with pytest.raises(CoordinatorStartError, match=r"within 1 s: the lease is held by first at "):
            second.start(timeout_s=1)
        assert time.monotonic() - started < 5
        assert second.address is None
        lease = current_holder(root)
        assert lease is not None and lease.holder == "first" and lease.address == first.address


def test_listen_overrides_the_configured_address(root: StateRoot, fast_config: Config) -> None:
    coordinator = BackgroundCoordinator(root, fast_config.with_values(listen="127.0.0.1:9"),
                                        listen="127.0.0.1:0")
    with coordinator:
        host, _, port = (coordinator.address or "").rpartition(":")
        assert host == "127.0.0.1" and int(port) not in (0, 9)


def test_starting_twice_is_refused(root: StateRoot, fast_config: Config) -> None:
    with BackgroundCoordinator(root, fast_config) as coordinator, \
            pytest.raises(CoordinatorStartError, match="already started"):
        coordinator.start()
