"""Leaving a consumer group: epoch -1 for good, epoch -2 for a static member that comes back (Kafka's
``consumerGroupLeave``, ``consumerGroupStaticMemberGroupLeave``, ``getOrMaybeSubscribeStaticConsumerGroupMember``)."""

from __future__ import annotations

import pytest

from groupcoord.coordinator.consumer_epochs import UNRELEASED_INSTANCE_ID
from groupcoord.group.consumer_member import MemberState
from groupcoord.protocol.errors import Errors, ProtocolError
from groupcoord.protocol.requests import ConsumerGroupHeartbeatRequest

from .scenario import TOPIC_ID, Scenario, parts


def _leave(s: Scenario, member_id: str, epoch: int, instance_id: str | None = None) -> tuple[str, int]:
    answer = s.heartbeat(ConsumerGroupHeartbeatRequest(
        group_id="g", member_id=member_id, member_epoch=epoch, instance_id=instance_id))
    return answer.member_id, answer.member_epoch


def _stable_pair(s: Scenario, *, instance_b: str | None = None) -> None:
    s.join("a")
    s.join("b", instance_id=instance_b)
    s.beat("a", 1, parts(0, 1, 2, 3))
    s.beat("a", 1, parts(0, 1))
    s.beat("b", 2, {}, instance_id=instance_b)
    assert s.member("b").assigned_partitions == parts(2, 3)


def test_static_member_leaving_for_a_while_keeps_its_assignment_and_rejoins_with_epoch_zero() -> None:
    """Epoch -2: the static member stays at epoch -2 with its assignment (epochs reset to 0, pending revocation
    dropped) and nobody else gets its partitions; the instance rejoins under a new member id with epoch 0, takes
    the old member's place and assignment, and the group epoch does not move (KIP-848, KIP-1251)."""
    s = Scenario()
    _stable_pair(s, instance_b="i-b")
    group_epoch = s.group.group_epoch
    assert _leave(s, "b", -2, "i-b") == ("b", -2)
    away = s.member("b")
    assert away.member_epoch == -2 and away.assigned_with_epochs == {TOPIC_ID: {2: 0, 3: 0}}
    assert s.group.current_partition_epoch(TOPIC_ID, 2) == -2
    assert s.group.group_epoch == group_epoch
    assert s.beat("a", 2, parts(0, 1)).assignment is None

    answer = s.join("b2", instance_id="i-b")
    assert (answer.member_id, answer.member_epoch, answer.assignment) == ("b2", group_epoch, parts(2, 3))
    assert s.group.member("b") is None and s.group.static_member_id("i-b") == "b2"
    back = s.member("b2")
    assert back.state is MemberState.STABLE and back.previous_member_epoch == 0
    assert back.assigned_with_epochs == {TOPIC_ID: {2: 0, 3: 0}}
    assert s.group.group_epoch == group_epoch


def test_instance_still_in_use_is_unreleased_instance_id() -> None:
    """A static member may take over its instance id only after the holder left with epoch -2:
    UNRELEASED_INSTANCE_ID otherwise, with Kafka's message."""
    s = Scenario()
    _stable_pair(s, instance_b="i-b")
    with pytest.raises(ProtocolError) as raised:
        s.join("b2", instance_id="i-b")
    assert raised.value.error == UNRELEASED_INSTANCE_ID
    assert str(raised.value) == ("UNRELEASED_INSTANCE_ID: Static member b2 with instance id i-b cannot join the "
                                 "group because the instance id is owned by b member.")


def test_static_heartbeat_of_a_replaced_or_unknown_instance_is_refused() -> None:
    """After a replacement the old member id is FENCED_INSTANCE_ID; an instance id the group does not know is
    UNKNOWN_MEMBER_ID (Kafka's ``throwIfInstanceIdIsFenced`` and ``throwIfStaticMemberIsUnknown``)."""
    s = Scenario()
    _stable_pair(s, instance_b="i-b")
    _leave(s, "b", -2, "i-b")
    s.join("b2", instance_id="i-b")
    with pytest.raises(ProtocolError) as fenced:
        s.beat("b", 2, parts(2, 3), instance_id="i-b")
    assert fenced.value.error == Errors.FENCED_INSTANCE_ID
    assert str(fenced.value) == "FENCED_INSTANCE_ID: Static member b with instance id i-b was fenced by member b2."
    with pytest.raises(ProtocolError) as unknown:
        _leave(s, "x", -2, "i-x")
    assert unknown.value.error == Errors.UNKNOWN_MEMBER_ID
    assert str(unknown.value) == "UNKNOWN_MEMBER_ID: Instance id i-x is unknown."


def test_member_leaving_with_minus_one_is_removed_and_its_partitions_go_to_the_others() -> None:
    """Epoch -1: the member is removed (its partitions are free at once), the group epoch is bumped, and the
    remaining member gets the whole target on its next heartbeat (Kafka's ``consumerGroupFenceMember``)."""
    s = Scenario()
    _stable_pair(s)
    group_epoch = s.group.group_epoch
    assert _leave(s, "b", -1) == ("b", -1)
    assert s.group.member("b") is None and s.group.group_epoch == group_epoch + 1
    assert s.group.current_partition_epoch(TOPIC_ID, 2) == -1
    answer = s.beat("a", 2, parts(0, 1))
    assert (answer.member_epoch, answer.assignment) == (group_epoch + 1, parts(0, 1, 2, 3))


def test_static_member_leaving_with_minus_one_is_removed_for_good() -> None:
    """A static member that leaves with -1 is fenced like a dynamic one, and its instance id is free."""
    s = Scenario()
    _stable_pair(s, instance_b="i-b")
    _leave(s, "b", -1, "i-b")
    assert s.group.static_member_id("i-b") is None
    assert s.join("b2", instance_id="i-b").member_epoch == s.group.group_epoch
