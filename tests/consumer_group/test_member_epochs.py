"""Member epochs of ConsumerGroupHeartbeat (Kafka 4.4's ``throwIfConsumerGroupMemberEpochIsInvalid``)."""

from __future__ import annotations

from uuid import UUID

import pytest

from groupcoord.coordinator.consumer_epochs import FENCED_MEMBER_EPOCH, is_subset, throw_if_member_epoch_invalid
from groupcoord.group.consumer_member import ConsumerGroupMember, OwnedPartitions, partition_epochs
from groupcoord.protocol.errors import Errors, ProtocolError

from .scenario import TOPIC_ID, Scenario, parts

MEMBER = ConsumerGroupMember(member_id="m", member_epoch=100, previous_member_epoch=99,
                             assigned_with_epochs=partition_epochs(parts(1, 2, 3), 100))


def _fenced(epoch: int, owned: OwnedPartitions | None) -> str:
    with pytest.raises(ProtocolError) as raised:
        throw_if_member_epoch_invalid(MEMBER, epoch, owned)
    assert raised.value.error == FENCED_MEMBER_EPOCH
    return str(raised.value)


def test_previous_epoch_reporting_a_subset_of_the_assignment_is_accepted() -> None:
    """Kafka accepts the previous epoch when the owned partitions are a subset of the assignment: the response that
    moved the member on may have been lost (``testConsumerGroupMemberEpochValidation``)."""
    throw_if_member_epoch_invalid(MEMBER, 99, parts(1, 2))
    throw_if_member_epoch_invalid(MEMBER, 99, {})
    throw_if_member_epoch_invalid(MEMBER, 100, None)


def test_heartbeat_at_previous_epoch_is_answered_with_the_current_epoch() -> None:
    """The accepted heartbeat at the previous epoch goes through reconciliation like any other and is answered
    with the member's current epoch, as in Kafka's ``testConsumerGroupMemberEpochValidation``."""
    s = Scenario()
    s.join("a")
    s.join("b")
    s.beat("a", 1, parts(0, 1, 2, 3))
    s.beat("a", 1, parts(0, 1))
    assert s.member("a").member_epoch == 2
    answer = s.beat("a", 1, parts(0))
    assert answer.member_epoch == 2


def test_previous_epoch_reporting_a_partition_it_never_owned_is_fenced() -> None:
    """FENCED_MEMBER_EPOCH: at an older epoch the owned partitions must all be assigned to the member; one it
    never owned (or a topic it has nothing of, even with no partitions) fails Kafka's ``isSubset``."""
    message = _fenced(99, parts(1, 7))
    assert message == ("FENCED_MEMBER_EPOCH: The consumer group member has a smaller member epoch (99) than the one "
                       "known by the group coordinator (100). The member must abandon all its partitions and rejoin.")
    _fenced(99, {UUID(int=9): []})


def test_previous_epoch_without_owned_partitions_is_fenced() -> None:
    """Kafka's ``isSubset`` is false when the heartbeat does not carry the owned partitions at all."""
    _fenced(99, None)


def test_older_epoch_that_is_not_the_previous_is_fenced() -> None:
    """Only the previous epoch is tolerated; anything older is FENCED_MEMBER_EPOCH even with a subset."""
    _fenced(50, parts(1))


def test_newer_epoch_is_fenced() -> None:
    """An epoch newer than the member's is FENCED_MEMBER_EPOCH, with Kafka's message."""
    assert _fenced(200, parts(1)) == (
        "FENCED_MEMBER_EPOCH: The consumer group member has a greater member epoch (200) than the one known by the "
        "group coordinator (100). The member must abandon all its partitions and rejoin.")


def test_member_the_group_still_has_may_rejoin_with_epoch_zero() -> None:
    """Since Kafka 4.3 (KAFKA-19233) epoch 0 is always accepted for an existing member, so a fenced member can
    rejoin; a STABLE member that rejoins gets its current epoch and assignment back, without a rebalance."""
    throw_if_member_epoch_invalid(MEMBER, 0, {})
    s = Scenario()
    s.join("a")
    answer = s.join("a")
    assert (answer.member_epoch, answer.assignment) == (1, parts(0, 1, 2, 3))
    assert s.group.group_epoch == 1


def test_unknown_member_at_a_nonzero_epoch_is_unknown_member_id() -> None:
    """Kafka's ``getOrMaybeCreateMember`` creates members only for epoch 0; any other epoch of a stranger is
    UNKNOWN_MEMBER_ID (``testUnknownMemberIdJoinsConsumerGroup``)."""
    s = Scenario()
    s.join("a")
    with pytest.raises(ProtocolError) as raised:
        s.beat("stranger", 1, {})
    assert raised.value.error == Errors.UNKNOWN_MEMBER_ID
    assert str(raised.value) == "UNKNOWN_MEMBER_ID: Member stranger is not a member of group g."


def test_is_subset_reads_topics_and_partitions() -> None:
    """The subset check sees every reported topic and partition; an empty report is a subset."""
    assigned = partition_epochs({TOPIC_ID: {0, 1}}, 3)
    assert is_subset({}, assigned)
    assert is_subset({TOPIC_ID: [1]}, assigned)
    assert not is_subset({TOPIC_ID: [1, 2]}, assigned)
    assert not is_subset(None, assigned)
