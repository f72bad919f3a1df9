"""Reconciliation (Kafka's ``CurrentAssignmentBuilder``): revoke first, then the new epoch, and only released
partitions."""

from __future__ import annotations

from uuid import UUID

import pytest

from groupcoord.coordinator.consumer_epochs import FENCED_MEMBER_EPOCH
from groupcoord.coordinator.consumer_reconciliation import (
    RebalanceTimer,
    is_fenced_by_rebalance_timeout,
    maybe_reconcile,
    reconcile,
)
from groupcoord.group.consumer_member import ConsumerGroupMember, MemberState, partition_epochs
from groupcoord.protocol.errors import ProtocolError

from .scenario import TOPIC_ID, Scenario, parts

OTHER_TOPIC = UUID(int=2)


def _free(topic_id: UUID, partition: int) -> int:
    return -1


def test_member_joining_an_empty_group_gets_the_whole_target_at_once() -> None:
    """Kafka ``computeNextAssignment``: nothing to revoke and no partition held elsewhere, so the member moves
    straight to the target epoch, STABLE, with its whole target; the join's response carries it."""
    s = Scenario()
    answer = s.join("a")
    assert (answer.member_epoch, answer.assignment) == (1, parts(0, 1, 2, 3))
    member = s.member("a")
    assert member.state is MemberState.STABLE
    assert (member.member_epoch, member.previous_member_epoch) == (1, 0)
    assert member.assigned_with_epochs == {TOPIC_ID: dict.fromkeys(range(4), 1)}
    assert s.group.current_partition_epoch(TOPIC_ID, 3) == 1


def test_second_member_waits_until_the_first_revokes_its_partitions() -> None:
    """KIP-848's revoke-before-assign: the first member keeps its epoch in UNREVOKED_PARTITIONS until it reports the
    revoked partitions gone; the second moves to the new epoch UNRELEASED_PARTITIONS and gets them only once they
    are free (Kafka ``computeNextAssignment``, ``ownsRevokedPartitions``)."""
    s = Scenario()
    s.join("a")
    b = s.join("b")
    assert (b.member_epoch, b.assignment) == (2, {})
    assert s.member("b").state is MemberState.UNRELEASED_PARTITIONS

    a = s.beat("a", 1, parts(0, 1, 2, 3))
    member_a = s.member("a")
    assert (a.member_epoch, a.assignment) == (1, parts(0, 1))
    assert member_a.state is MemberState.UNREVOKED_PARTITIONS
    assert member_a.partitions_pending_revocation == parts(2, 3)
    assert s.group.current_partition_epoch(TOPIC_ID, 2) == 1

    still = s.beat("b", 2, {})
    assert still.assignment is None and s.member("b").state is MemberState.UNRELEASED_PARTITIONS

    a = s.beat("a", 1, parts(0, 1))
    assert (a.member_epoch, s.member("a").state) == (2, MemberState.STABLE)
    assert s.group.current_partition_epoch(TOPIC_ID, 2) == -1

    b = s.beat("b", 2, {})
    assert (b.member_epoch, b.assignment) == (2, parts(2, 3))
    assert s.member("b").state is MemberState.STABLE


def test_heartbeat_without_owned_partitions_does_not_count_as_revoking() -> None:
    """Kafka ``ownsRevokedPartitions``: a heartbeat that does not carry the owned partitions (null) is taken as
    still owning the revoked ones, so the member stays in UNREVOKED_PARTITIONS at its epoch."""
    s = Scenario()
    s.join("a")
    s.join("b")
    s.beat("a", 1, parts(0, 1, 2, 3))
    answer = s.beat("a", 1, None)
    assert answer.member_epoch == 1 and s.member("a").state is MemberState.UNREVOKED_PARTITIONS


def test_partition_the_member_itself_is_revoking_is_not_unreleased_for_it() -> None:
    """Kafka ``computeNextAssignment``: a target partition held by the member itself, pending revocation, is not
    waited for: once the member reports its revoked partitions gone, it gets that one back at the target epoch even
    though the group still shows it held (by the member itself)."""
    member = ConsumerGroupMember(
        member_id="a", member_epoch=3, previous_member_epoch=2, state=MemberState.UNREVOKED_PARTITIONS,
        assigned_with_epochs=partition_epochs(parts(0), 2),
        pending_revocation_with_epochs=partition_epochs(parts(1, 2), 2))
    held = {(TOPIC_ID, 0): 3, (TOPIC_ID, 1): 3, (TOPIC_ID, 2): 3}
    after = reconcile(member, target_epoch=4, target=parts(0, 1), owned=parts(0),
                      current_partition_epoch=lambda t, p: held.get((t, p), -1), subscribed_topic_ids=[TOPIC_ID])
    assert (after.member_epoch, after.state) == (4, MemberState.STABLE)
    assert after.assigned_with_epochs == {TOPIC_ID: {0: 2, 1: 4}}
    assert after.partitions_pending_revocation == {}


def test_topic_no_longer_subscribed_is_revoked_at_once() -> None:
    """Kafka ``updateCurrentAssignment`` (``withHasSubscriptionChanged``): a STABLE member at the target epoch that
    drops a topic from its subscription must revoke that topic's partitions without waiting for a new target."""
    member = ConsumerGroupMember(
        member_id="a", member_epoch=5, previous_member_epoch=4,
        assigned_with_epochs={TOPIC_ID: {0: 5}, OTHER_TOPIC: {0: 5, 1: 5}})
    after = reconcile(member, target_epoch=5, target={TOPIC_ID: frozenset({0}), OTHER_TOPIC: frozenset({0, 1})},
                      owned={TOPIC_ID: [0], OTHER_TOPIC: [0, 1]}, current_partition_epoch=_free,
                      subscribed_topic_ids=[TOPIC_ID], has_subscription_changed=True)
    assert (after.member_epoch, after.state) == (5, MemberState.UNREVOKED_PARTITIONS)
    assert after.assigned_partitions == parts(0)
    assert after.partitions_pending_revocation == {OTHER_TOPIC: frozenset({0, 1})}
    unchanged = reconcile(member, target_epoch=5, target={}, owned=None, current_partition_epoch=_free,
                          subscribed_topic_ids=[TOPIC_ID], has_subscription_changed=False)
    assert unchanged is member


def test_member_in_unknown_state_is_fenced_unless_it_reports_owning_nothing() -> None:
    """Kafka ``CurrentAssignmentBuilder.build``, UNKNOWN (a state a newer coordinator wrote): FENCED_MEMBER_EPOCH
    unless the member reports an empty assignment; then it is reconciled from scratch at the target epoch."""
    member = ConsumerGroupMember(member_id="a", member_epoch=3, state=MemberState.from_value(9))
    assert member.state is MemberState.UNKNOWN
    for owned in (None, parts(0)):
        with pytest.raises(ProtocolError) as raised:
            reconcile(member, target_epoch=4, target=parts(0), owned=owned, current_partition_epoch=_free,
                      subscribed_topic_ids=[TOPIC_ID])
        assert raised.value.error == FENCED_MEMBER_EPOCH
    after = reconcile(member, target_epoch=4, target=parts(0), owned={}, current_partition_epoch=_free,
                      subscribed_topic_ids=[TOPIC_ID])
    assert (after.member_epoch, after.previous_member_epoch, after.state) == (4, 3, MemberState.STABLE)


def test_rebalance_timer_is_scheduled_while_revoking_and_fences_only_a_member_still_at_that_epoch() -> None:
    """Kafka ``maybeReconcile`` schedules the rebalance timeout when the member enters UNREVOKED_PARTITIONS and
    cancels it otherwise; the timeout fences the member only if it is still at the epoch it was scheduled at."""
    member = ConsumerGroupMember(member_id="a", member_epoch=1, previous_member_epoch=0,
                                 assigned_with_epochs=partition_epochs(parts(0, 1), 1))
    revoking = maybe_reconcile(member, target_epoch=2, target=parts(0), owned=parts(0, 1),
                               current_partition_epoch=_free, subscribed_topic_ids=[TOPIC_ID])
    assert revoking.changed and revoking.rebalance_timer is RebalanceTimer.SCHEDULE
    done = maybe_reconcile(revoking.member, target_epoch=2, target=parts(0), owned=parts(0),
                           current_partition_epoch=_free, subscribed_topic_ids=[TOPIC_ID])
    assert done.changed and done.rebalance_timer is RebalanceTimer.CANCEL
    idle = maybe_reconcile(done.member, target_epoch=2, target=parts(0), owned=parts(0),
                           current_partition_epoch=_free, subscribed_topic_ids=[TOPIC_ID])
    assert (idle.changed, idle.rebalance_timer, idle.member) == (False, None, done.member)
    assert is_fenced_by_rebalance_timeout(revoking.member, scheduled_epoch=1)
    assert not is_fenced_by_rebalance_timeout(done.member, scheduled_epoch=1)
    assert not is_fenced_by_rebalance_timeout(None, scheduled_epoch=1)
