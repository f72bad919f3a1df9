"""Two GroupMembers against a real coordinator endpoint: they split the partitions, hand over on close, commit."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kafka.structs import OffsetAndMetadata, TopicPartition

from groupcoord.member import GroupMember, MemberState
from tests.member.conftest import Coordinator, RecordingListener, poll_until, wait_for

pytestmark = pytest.mark.integration

TOPIC = "orders"
ALL = {TopicPartition(TOPIC, p) for p in range(6)}


@pytest.mark.parametrize("cooperative", [True, False], ids=["cooperative", "eager"])
def test_two_members_split_six_partitions_and_the_survivor_takes_all_when_one_closes(
    coordinator: Callable[..., Coordinator], members: Callable[..., GroupMember], cooperative: bool,
) -> None:
    stack = coordinator({TOPIC: 6}, cooperative=cooperative)
    assignors = ("server-cooperative-sticky",) if cooperative else ("server-sticky",)
    listeners = RecordingListener(), RecordingListener()
    first, second = (members(topics=[TOPIC], bootstrap_servers=stack.bootstrap, assignors=assignors, listener=lsn)
                     for lsn in listeners)
    assert first.cooperative is cooperative

    def split() -> bool:
        a, b = first.assignment(), second.assignment()
        return (len(a) == 3 and len(b) == 3 and first.state is MemberState.STABLE
                and second.state is MemberState.STABLE
                and first.generation.generation_id == second.generation.generation_id)

    poll_until([first, second], split)
    assert first.assignment() | second.assignment() == ALL
    assert first.generation.protocol == assignors[0]

    kept, seen = first.assignment(), len(listeners[0].events)
    second.close()
    assert listeners[1].events[-1] == ("revoked", sorted(ALL - kept))
    poll_until([first], lambda: first.assignment() == ALL)
    if cooperative:
        # KIP-429: the survivor keeps its partitions across the rebalance and is told only of the added ones.
        assert listeners[0].events[seen:] == [("assigned", sorted(ALL - kept))]
    else:
        assert listeners[0].events[seen:] == [("revoked", sorted(kept)), ("assigned", sorted(ALL))]


def test_commit_sync_and_async_round_trip_through_committed(
    coordinator: Callable[..., Coordinator], members: Callable[..., GroupMember],
) -> None:
    stack = coordinator({TOPIC: 2})
    member = members(topics=[TOPIC], state_root=stack.root.path)
    poll_until([member], lambda: len(member.assignment()) == 2)
    p0, p1 = TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)
    assert member.committed([p0, p1]) == {p0: None, p1: None}

    member.commit_sync({p0: 5, p1: OffsetAndMetadata(9, "checkpoint", -1)})
    assert member.committed([p0, p1]) == {p0: OffsetAndMetadata(5, "", -1), p1: OffsetAndMetadata(9, "checkpoint", -1)}

    seen: list[object] = []
    member.commit_async({p0: 7}, callback=lambda offsets, error: seen.append((dict(offsets), error))).result(10)
    assert seen == [({p0: OffsetAndMetadata(7, "", -1)}, None)]
    assert member.committed([p0])[p0] == OffsetAndMetadata(7, "", -1)
    assert stack.log.batches, "commits reached the record log"


def test_auto_commit_commits_marked_offsets_periodically_and_before_giving_partitions_up(
    coordinator: Callable[..., Coordinator], members: Callable[..., GroupMember],
) -> None:
    stack = coordinator({TOPIC: 2})
    p0 = TopicPartition(TOPIC, 0)
    member = members(topics=[TOPIC], bootstrap_servers=stack.bootstrap, enable_auto_commit=True)
    poll_until([member], lambda: len(member.assignment()) == 2)
    member.mark_processed({p0: 5})
    poll_until([member], lambda: member.committed([p0])[p0] == OffsetAndMetadata(5, "", -1))

    member.mark_processed({p0: 8})
    member.close()  # revokes, which commits first
    reader = members(topics=[TOPIC], bootstrap_servers=stack.bootstrap)
    assert reader.committed([p0])[p0] == OffsetAndMetadata(8, "", -1)


def test_a_member_that_stops_polling_for_a_rebalance_timeout_leaves_and_loses_its_partitions(
    coordinator: Callable[..., Coordinator], members: Callable[..., GroupMember],
) -> None:
    stack = coordinator({TOPIC: 2})
    listener = RecordingListener()
    stalled = members(topics=[TOPIC], bootstrap_servers=stack.bootstrap, rebalance_timeout_ms=1000, listener=listener)
    poll_until([stalled], lambda: len(stalled.assignment()) == 2)
    # The member's own timer, not the coordinator's: with another member joining at once, the coordinator's equal
    # rebalance timeout could remove the stalled member first on a loaded machine (its heartbeat thread woke late).
    wait_for(lambda: stack.observed.errors_of("LeaveGroupResponse") == ["NONE"])
    other = members(topics=[TOPIC], bootstrap_servers=stack.bootstrap, rebalance_timeout_ms=1000)

    poll_until([other], lambda: other.assignment() == {TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)})
    assert listener.kinds() == ["assigned"]  # callbacks wait for the application's next poll

    poll_until([stalled, other], lambda: len(stalled.assignment()) == 1 and len(other.assignment()) == 1)
    both = [TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)]
    assert listener.events[:2] == [("assigned", both), ("lost", both)]
