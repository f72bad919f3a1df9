"""The service around the core: responses wait for durability, heartbeats never do, storage failures map to errors."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest

from groupcoord.coordinator import CoordinatorConfig, GroupCoordinator
from groupcoord.log.base import LogFencedError, StorageUnavailableError
from groupcoord.log.memory import InMemoryRecordLog
from groupcoord.protocol import (
    Errors,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupProtocol,
    JoinGroupRequest,
    JoinGroupResponse,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitTopic,
    SyncGroupAssignment,
    SyncGroupRequest,
    SyncGroupResponse,
)
from groupcoord.runtime.service import CoordinatorService, RequestFailed
from groupcoord.runtime.writer import log_persister
from tests.narrowing import expect

GROUP = "g"


class GatedStorage:
    """Persists into an in-memory log, but only while the gate is open; can be told to fail instead."""

    def __init__(self) -> None:
        self.log = InMemoryRecordLog()
        self.gate = asyncio.Event()
        self.gate.set()
        self.failure: Exception | None = None
        self._persist = log_persister(self.log)

    async def persist(self, records: Sequence[Any]) -> None:
        await self.gate.wait()
        if self.failure is not None:
            raise self.failure
        await self._persist(records)


def _service(storage: GatedStorage) -> CoordinatorService:
    coordinator = GroupCoordinator(CoordinatorConfig(initial_rebalance_delay_ms=0))
    return CoordinatorService(coordinator, persist=storage.persist, tick_ms=10)


def _commit(offset: int, *, generation_id: int = -1, member_id: str = "") -> OffsetCommitRequest:
    return OffsetCommitRequest(group_id=GROUP, generation_id=generation_id, member_id=member_id,
                               topics=(OffsetCommitTopic("t", (OffsetCommitPartition(0, offset),)),))


async def _stable_member(service: CoordinatorService) -> tuple[str, int]:
    """Join and sync one member; returns its member id and generation."""
    join = JoinGroupRequest(group_id=GROUP, session_timeout_ms=10000, protocol_type="consumer",
                            protocols=(JoinGroupProtocol("range", b""),))
    first = expect(await service.submit(join), JoinGroupResponse)
    assert first.error is Errors.MEMBER_ID_REQUIRED
    joined = expect(await service.submit(replace(join, member_id=first.member_id)), JoinGroupResponse)
    assert joined.error is Errors.NONE
    synced = expect(await service.submit(SyncGroupRequest(
        group_id=GROUP, generation_id=joined.generation_id, member_id=joined.member_id,
        assignments=(SyncGroupAssignment(joined.member_id, b"a"),),
    )), SyncGroupResponse)
    assert synced.error is Errors.NONE
    return joined.member_id, joined.generation_id


def test_commit_is_answered_only_once_durable_and_heartbeats_do_not_wait() -> None:
    async def scenario() -> None:
        storage = GatedStorage()
        service = _service(storage)
        await service.start()
        try:
            member_id, generation = await _stable_member(service)
            written = len(storage.log.batches)
            storage.gate.clear()  # storage stalls
            commit = asyncio.create_task(service.submit(_commit(5, generation_id=generation, member_id=member_id)))
            heartbeat = await asyncio.wait_for(
                service.submit(HeartbeatRequest(group_id=GROUP, generation_id=generation, member_id=member_id)), 1
            )
            assert expect(heartbeat, HeartbeatResponse).error is Errors.NONE
            await asyncio.sleep(0.05)
            assert not commit.done()
            assert len(storage.log.batches) == written
            storage.gate.set()
            response = await asyncio.wait_for(commit, 1)
            assert expect(response, OffsetCommitResponse).topics[0].partitions[0].error is Errors.NONE
            assert len(storage.log.batches) == written + 1
        finally:
            await service.stop()

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("failure", "error", "still_serving"),
    [
        (StorageUnavailableError("disk full"), Errors.COORDINATOR_NOT_AVAILABLE, True),
        (LogFencedError("version taken"), Errors.NOT_COORDINATOR, False),
    ],
    ids=["storage-unavailable", "fenced"],
)
def test_a_write_that_does_not_become_durable_is_answered_with_an_error(
    failure: Exception, error: Any, still_serving: bool
) -> None:
    async def scenario() -> None:
        storage = GatedStorage()
        service = _service(storage)
        await service.start()
        try:
            storage.failure = failure
            with pytest.raises(RequestFailed) as raised:
                await asyncio.wait_for(service.submit(_commit(1)), 1)
            assert raised.value.error is error
            assert storage.log.batches == []
            assert (service.availability() is Errors.NONE) is still_serving
            if not still_serving:
                with pytest.raises(RequestFailed) as refused:
                    await service.submit(_commit(2))
                assert refused.value.error is Errors.NOT_COORDINATOR
        finally:
            await service.stop()

    asyncio.run(scenario())


def test_stop_answers_parked_requests_with_not_coordinator() -> None:
    async def scenario() -> None:
        storage = GatedStorage()
        service = _service(storage)
        await service.start()
        storage.gate.clear()
        parked = asyncio.create_task(service.submit(_commit(3)))
        await asyncio.sleep(0.02)
        await service.stop()
        with pytest.raises(RequestFailed) as raised:
            await asyncio.wait_for(parked, 1)
        assert raised.value.error is Errors.NOT_COORDINATOR
        storage.gate.set()

    asyncio.run(scenario())
