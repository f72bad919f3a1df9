"""The consumer group's books: its state derived as Kafka's ``ConsumerGroup.maybeUpdateGroupState`` derives it,
the partition -> epoch map and the preferred server assignor."""

from __future__ import annotations

import pytest

from groupcoord.coordinator.consumer_reconciliation import reconcile
from groupcoord.group.consumer_group import ConsumerGroup, ConsumerGroupState
from groupcoord.group.consumer_member import ConsumerGroupMember, partition_epochs
from groupcoord.group.metadata import GroupInvariantError

from .scenario import TOPIC_ID, parts


def _state(group: ConsumerGroup) -> ConsumerGroupState:
    """The group's state, read afresh (so that the type checker does not carry an earlier comparison over)."""
    return group.state


def test_group_state_goes_empty_assigning_reconciling_stable() -> None:
    """Empty without members; Assigning while the group epoch is ahead of the target's; Reconciling while a member
    is not STABLE at the target epoch; Stable once all are; Empty again when the last member leaves."""
    group = ConsumerGroup("g")
    assert _state(group) is ConsumerGroupState.EMPTY

    group.update_member(ConsumerGroupMember(member_id="a", subscribed_topic_names=frozenset({"t"})))
    group.set_group_epoch(1)
    assert _state(group) is ConsumerGroupState.ASSIGNING

    group.set_target_assignment("a", parts(0, 1))
    group.set_target_assignment_epoch(1)
    assert _state(group) is ConsumerGroupState.RECONCILING

    member = group.member("a")
    assert member is not None
    group.update_member(reconcile(member, target_epoch=1, target=group.target_assignment_of("a"), owned={},
                                  current_partition_epoch=group.current_partition_epoch,
                                  subscribed_topic_ids=[TOPIC_ID]))
    assert _state(group) is ConsumerGroupState.STABLE
    assert _state(group).value == "Stable"

    group.remove_member("a")
    group.remove_target_assignment("a")
    assert _state(group) is ConsumerGroupState.EMPTY


def test_partition_epochs_follow_the_members_and_refuse_a_second_owner() -> None:
    """Every held partition maps to its holder's epoch, pending revocation included; a member claiming a partition
    another member holds breaks Kafka's invariant ("still owned at epoch") and changes nothing."""
    group = ConsumerGroup("g")
    a = ConsumerGroupMember(member_id="a", member_epoch=3, assigned_with_epochs=partition_epochs(parts(0), 3),
                            pending_revocation_with_epochs=partition_epochs(parts(1), 2))
    group.update_member(a)
    assert [group.current_partition_epoch(TOPIC_ID, p) for p in range(3)] == [3, 3, -1]

    intruder = ConsumerGroupMember(member_id="b", member_epoch=4, assigned_with_epochs=partition_epochs(parts(1, 2), 4))
    with pytest.raises(GroupInvariantError, match="still owned at epoch 3"):
        group.update_member(intruder)
    assert group.member("b") is None and group.current_partition_epoch(TOPIC_ID, 2) == -1

    group.update_member(ConsumerGroupMember(member_id="a", member_epoch=4,
                                            assigned_with_epochs=partition_epochs(parts(0), 3)))
    assert [group.current_partition_epoch(TOPIC_ID, p) for p in range(3)] == [4, -1, -1]
    group.update_member(ConsumerGroupMember(member_id="b", member_epoch=4,
                                            assigned_with_epochs=partition_epochs(parts(1, 2), 4)))
    assert group.remove_member("a") is not None and group.remove_member("a") is None
    assert [group.current_partition_epoch(TOPIC_ID, p) for p in range(3)] == [-1, 4, 4]


def test_static_members_subscriptions_and_preferred_assignor_are_counted() -> None:
    """The group knows which member holds each instance id, how many members subscribe to each topic, and the
    server assignor most members ask for (a tie goes to the smallest name)."""
    group = ConsumerGroup("g")
    group.update_member(ConsumerGroupMember(member_id="a", instance_id="i-a", server_assignor_name="uniform",
                                            subscribed_topic_names=frozenset({"t", "u"})))
    group.update_member(ConsumerGroupMember(member_id="b", server_assignor_name="range",
                                            subscribed_topic_names=frozenset({"t"})))
    assert group.static_member_id("i-a") == "a" and group.has_static_member("i-a")
    assert dict(group.subscribed_topic_names) == {"t": 2, "u": 1}
    assert group.preferred_server_assignor() == "range"
    group.update_member(ConsumerGroupMember(member_id="c", server_assignor_name="uniform"))
    assert group.preferred_server_assignor() == "uniform"
    group.remove_member("a")
    assert group.static_member("i-a") is None and dict(group.subscribed_topic_names) == {"t": 1}
    group.set_subscription_metadata({"t": 4})
    assert group.subscription_metadata == {"t": 4}
