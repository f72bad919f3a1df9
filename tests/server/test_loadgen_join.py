"""bench.loadgen's join rounds against a real coordinator endpoint: they finish, or time out with the story."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from bench.loadgen import JoinRoundTimeout, Membership, join_group, join_round, subscription_metadata
from tests.server.conftest import CoordinatorStack

OPTIONS: dict[str, Any] = {"session_timeout_ms": 30_000, "rebalance_timeout_ms": 60_000,
                           "metadata": subscription_metadata(["t"])}


def _members(group: str, count: int) -> list[Membership]:
    return [Membership(group, f"{group}-{k}") for k in range(count)]


def test_join_group_puts_every_member_in_one_generation(
        coordinator_stack: Callable[..., CoordinatorStack]) -> None:
    stack = coordinator_stack()
    address = stack.running.address
    members = _members("lg", 3)
    rounds = asyncio.run(join_group(address.host, address.port, members, timeout_s=10.0, **OPTIONS))
    assert rounds >= 1
    assert len({m.generation for m in members}) == 1 and members[0].generation >= 1
    assert all(m.member_id for m in members)


def test_a_round_the_coordinator_holds_times_out_naming_the_waiting_members(
        coordinator_stack: Callable[..., CoordinatorStack]) -> None:
    stack = coordinator_stack()
    address = stack.running.address
    members = _members("held", 2)
    asyncio.run(join_group(address.host, address.port, members, timeout_s=10.0, **OPTIONS))
    # Only the first member rejoins: the coordinator waits (up to the rebalance timeout) for the second.
    with pytest.raises(JoinRoundTimeout) as caught:
        asyncio.run(join_round(address.host, address.port, members[:1], timeout_s=1.0, **OPTIONS))
    message = str(caught.value)
    assert "1 of 1 members unfinished (held-0: JoinGroup sent, no answer)" in message


def test_join_group_gives_up_after_its_attempts_with_the_last_story(
        coordinator_stack: Callable[..., CoordinatorStack]) -> None:
    stack = coordinator_stack()
    address = stack.running.address
    members = _members("stuck", 2)
    asyncio.run(join_group(address.host, address.port, members, timeout_s=10.0, **OPTIONS))
    with pytest.raises(RuntimeError, match=r"no complete round in 2 attempts; last: .*JoinGroup sent, no answer"):
        asyncio.run(join_group(address.host, address.port, members[:1], attempts=2, timeout_s=0.5, **OPTIONS))


def test_a_silent_server_times_out_the_connect_or_join() -> None:
    async def scenario() -> None:
        server = await asyncio.start_server(lambda reader, writer: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        try:
            await join_round("127.0.0.1", port, _members("silent", 2), timeout_s=0.5, **OPTIONS)
        finally:
            server.close()

    with pytest.raises(JoinRoundTimeout, match="2 of 2 members unfinished"):
        asyncio.run(scenario())
