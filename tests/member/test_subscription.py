"""Pattern subscriptions follow the catalog; client-side protocols are assigned by the member that leads."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kafka.structs import TopicPartition

from groupcoord.member import GroupMember
from tests.member.conftest import Coordinator, RecordingListener, poll_until

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("via", ["state_root", "bootstrap_servers"])
def test_pattern_member_rejoins_when_a_matching_topic_appears_and_ignores_others(
    coordinator: Callable[..., Coordinator], members: Callable[..., GroupMember], via: str,
) -> None:
    stack = coordinator({"orders-eu": 2, "payments": 2})
    where = {"state_root": stack.root.path} if via == "state_root" else {"bootstrap_servers": stack.bootstrap}
    listener = RecordingListener()
    member = members(pattern=r"orders-[a-z]+", listener=listener, **where)
    poll_until([member], lambda: len(member.assignment()) == 2)
    assert member.subscription() == ("orders-eu",)

    stack.catalog.create("orders-us", 3)
    stack.catalog.create("orders-us2", 1)  # the pattern matches only a prefix of it: not subscribed
    poll_until([member], lambda: len(member.assignment()) == 5)
    assert member.subscription() == ("orders-eu", "orders-us")
    assert {tp.topic for tp in member.assignment()} == {"orders-eu", "orders-us"}
    assert listener.events[-1] == ("assigned", [TopicPartition("orders-us", p) for p in range(3)])


@pytest.mark.parametrize(("assignor", "expected"), [
    ("range", [[0, 1, 2], [3, 4]]),
    ("roundrobin", [[0, 2, 4], [1, 3]]),
])
def test_the_leader_assigns_client_side_protocols_with_kafkas_assignors(
    coordinator: Callable[..., Coordinator], members: Callable[..., GroupMember], assignor: str,
    expected: list[list[int]],
) -> None:
    stack = coordinator({"orders": 5}, cooperative=False)
    first, second = (members(topics=["orders"], bootstrap_servers=stack.bootstrap, assignors=[assignor])
                     for _ in range(2))
    assert not first.cooperative
    poll_until([first, second], lambda: len(first.assignment()) + len(second.assignment()) == 5
               and bool(first.assignment()) and bool(second.assignment())
               and first.generation.generation_id == second.generation.generation_id)
    assert first.generation.protocol == assignor
    by_member = {m.member_id: sorted(tp.partition for tp in m.assignment()) for m in (first, second)}
    assert [by_member[m] for m in sorted(by_member)] == expected
