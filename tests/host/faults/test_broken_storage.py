"""Broken storage under a real ``serve``: a full disk (4 MiB tmpfs) and a read-only remount of the state root.

While storage refuses writes the coordinator acknowledges nothing: offset commits are answered
COORDINATOR_NOT_AVAILABLE (retriable), heartbeats are still answered (they never touch Delta), and the log says why.
When storage comes back, writes are acknowledged again without a restart, and every acknowledged commit survives a
restart. Tests run as root, so only a real mount proves this; where mounting is refused the tests skip with the
reason.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from kafka.protocol.consumer import OffsetFetchRequest

from groupcoord.protocol.errors import Errors
from groupcoord.server.api import BrokerAddress
from tests.host.conftest import ServeProcess, commit_request, fetch
from tests.host.faults.conftest import SmallDisk, StaticMember
from tests.server.conftest import RawClient

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.faults]

# A lease long enough that the holder keeps serving through the outage (renewals fail while storage is down).
LONG_LEASE = ("--conf", "lease.timeout.ms=60000", "--conf", "group.initial.rebalance.delay.ms=0")
RECOVERY_TIMEOUT_S = 30.0


def commit_error(client: RawClient, offset: int) -> int:
    """Commit ``offset`` for partition 0 of topic t in group g; the partition's error code."""
    response = client.request(commit_request("g", "t", {0: offset}))
    return int(response.topics[0].partitions[0].error_code)


def _start(serve: Callable[..., ServeProcess], disk: SmallDisk) -> tuple[ServeProcess, BrokerAddress, RawClient,
                                                                            StaticMember]:
    process = serve(*LONG_LEASE, root=disk.path / "root")
    address = process.wait_ready(timeout=60)
    client = RawClient(address)
    member = StaticMember(RawClient(address), "members", "m-1")
    member.join()
    assert commit_error(client, 1) == Errors.NONE.code
    return process, address, client, member


def _assert_refuses_writes_but_answers_heartbeats(client: RawClient, member: StaticMember) -> None:
    # The first commit meets the failing Delta write; later ones are refused up front while storage is unhealthy.
    for offset in (2, 3, 4):
        assert commit_error(client, offset) == Errors.COORDINATOR_NOT_AVAILABLE.code
    assert member.heartbeat() == Errors.NONE.code
    time.sleep(1.0)  # the batcher keeps retrying in the background meanwhile
    assert commit_error(client, 5) == Errors.COORDINATOR_NOT_AVAILABLE.code
    assert member.heartbeat() == Errors.NONE.code
    _assert_no_unacknowledged_offset_is_reported(client)


def _assert_no_unacknowledged_offset_is_reported(client: RawClient) -> None:
    """OffsetFetch must not present offset 2 (applied in memory, not durable) as committed: an error, or 1."""
    response = client.request(OffsetFetchRequest(version=7, group_id="g", require_stable=False, topics=[
        OffsetFetchRequest.OffsetFetchRequestTopic(name="t", partition_indexes=[0])]))
    if response.error_code == 0:
        partition = response.topics[0].partitions[0]
        assert partition.error_code != 0 or partition.committed_offset == 1, (
            f"OffsetFetch reported {partition.committed_offset}, which was never acknowledged")


def _wait_until_writes_are_acknowledged(client: RawClient, offset: int) -> float:
    started = time.monotonic()
    while commit_error(client, offset) != Errors.NONE.code:
        if time.monotonic() - started > RECOVERY_TIMEOUT_S:
            pytest.fail(f"writes not acknowledged {RECOVERY_TIMEOUT_S} s after storage came back")
        time.sleep(0.2)
    return time.monotonic() - started


def _assert_survives_restart(serve: Callable[..., ServeProcess], process: ServeProcess, disk: SmallDisk,
                             offset: int) -> None:
    assert process.terminate() == 0
    survivor = serve(*LONG_LEASE, root=disk.path / "root")
    assert fetch(survivor.wait_ready(timeout=60), "g", "t", [0]) == {0: offset}


def test_full_disk_refuses_writes_keeps_heartbeats_and_recovers_when_space_returns(
    small_disk: SmallDisk, serve: Callable[..., ServeProcess]
) -> None:
    process, _, client, member = _start(serve, small_disk)
    assert small_disk.fill() > 0
    _assert_refuses_writes_but_answers_heartbeats(client, member)
    assert "No space left on device" in process.stderr(), "the log must say why writes fail"
    small_disk.free()
    took = _wait_until_writes_are_acknowledged(client, 6)
    assert took < RECOVERY_TIMEOUT_S
    assert member.heartbeat() == Errors.NONE.code
    client.close()
    member.client.close()
    _assert_survives_restart(serve, process, small_disk, 6)


def test_read_only_remount_refuses_writes_keeps_heartbeats_and_recovers_when_writable(
    small_disk: SmallDisk, serve: Callable[..., ServeProcess]
) -> None:
    process, _, client, member = _start(serve, small_disk)
    small_disk.remount(read_only=True)
    try:
        _assert_refuses_writes_but_answers_heartbeats(client, member)
        assert "Read-only file system" in process.stderr(), "the log must say why writes fail"
    finally:
        small_disk.remount(read_only=False)
    _wait_until_writes_are_acknowledged(client, 6)
    assert member.heartbeat() == Errors.NONE.code
    client.close()
    member.client.close()
    _assert_survives_restart(serve, process, small_disk, 6)
