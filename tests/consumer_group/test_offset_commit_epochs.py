"""Member epochs of offset commits and fetches in a consumer group (Kafka 4.4's ``ConsumerGroup.validateOffsetCommit``
with KIP-1251's per-partition check, and ``validateOffsetFetch``)."""

from __future__ import annotations

import pytest

from groupcoord.coordinator.consumer_epochs import (
    NO_PARTITION_CHECK,
    STALE_MEMBER_EPOCH,
    CommitPartitionValidator,
    validate_offset_commit,
    validate_offset_fetch,
)
from groupcoord.group.consumer_group import ConsumerGroup
from groupcoord.group.consumer_member import ConsumerGroupMember, MemberState
from groupcoord.protocol.errors import ErrorCode, Errors, ProtocolError

from .scenario import TOPIC_ID


def _group() -> ConsumerGroup:
    """Member ``m`` at epoch 5: t-0 assigned at epoch 3, t-1 at epoch 5, t-2 pending revocation (assigned at 4)."""
    group = ConsumerGroup("g")
    group.update_member(ConsumerGroupMember(
        member_id="m", member_epoch=5, previous_member_epoch=4, state=MemberState.UNREVOKED_PARTITIONS,
        assigned_with_epochs={TOPIC_ID: {0: 3, 1: 5}}, pending_revocation_with_epochs={TOPIC_ID: {2: 4}}))
    return group


def _commit(group: ConsumerGroup, epoch: int, *, member_id: str = "m", api_version: int = 9,
            transactional: bool = False) -> CommitPartitionValidator:
    return validate_offset_commit(group, member_id=member_id, group_instance_id=None, member_epoch=epoch,
                                  is_transactional=transactional, api_version=api_version)


def _refused(check: CommitPartitionValidator, partition: int) -> tuple[ErrorCode, str]:
    with pytest.raises(ProtocolError) as raised:
        check("t", TOPIC_ID, partition)
    return raised.value.error, str(raised.value)


def test_commit_at_the_members_epoch_commits_every_partition() -> None:
    """The member's own epoch needs no per-partition check (Kafka returns ``CommitPartitionValidator.NO_OP``)."""
    assert _commit(_group(), 5) is NO_PARTITION_CHECK


def test_commit_at_a_newer_epoch_is_stale_member_epoch() -> None:
    """An epoch newer than the member's is STALE_MEMBER_EPOCH for the whole commit, with Kafka's message."""
    with pytest.raises(ProtocolError) as raised:
        _commit(_group(), 6)
    assert raised.value.error == STALE_MEMBER_EPOCH
    assert str(raised.value) == "STALE_MEMBER_EPOCH: Received member epoch 6 is newer than current member epoch 5."


def test_commit_at_an_older_epoch_is_checked_partition_by_partition() -> None:
    """KIP-1251: at an older epoch a partition commits only if the member holds it (assigned, else pending
    revocation) and was assigned it at or before that epoch; every other partition is STALE_MEMBER_EPOCH."""
    check = _commit(_group(), 4)
    check("t", TOPIC_ID, 0)
    check("t", TOPIC_ID, 2)
    assert _refused(check, 1) == (STALE_MEMBER_EPOCH, "STALE_MEMBER_EPOCH: Received member epoch 4 is older than "
                                                      "assignment epoch 5 for partition t-1.")
    assert _refused(check, 3) == (STALE_MEMBER_EPOCH, "STALE_MEMBER_EPOCH: Partition t-3 is not assigned or "
                                                      "pending revocation for member.")


def test_commit_refusals_before_the_epoch() -> None:
    """A stranger is UNKNOWN_MEMBER_ID; a member of the consumer protocol must commit with OffsetCommit v9+
    (UNSUPPORTED_VERSION), which TxnOffsetCommit does not need."""
    with pytest.raises(ProtocolError) as unknown:
        _commit(_group(), 5, member_id="x")
    assert str(unknown.value) == "UNKNOWN_MEMBER_ID: Member x is not a member of group g."
    with pytest.raises(ProtocolError) as old_version:
        _commit(_group(), 5, api_version=8)
    assert old_version.value.error == Errors.UNSUPPORTED_VERSION
    assert _commit(_group(), 5, api_version=3, transactional=True) is NO_PARTITION_CHECK


def test_commit_without_group_management() -> None:
    """Epoch -1 commits freely on an empty group (admin client, manual assignment), and so does a transactional
    commit without member; on a group with members an unknown member id is still refused."""
    assert _commit(ConsumerGroup("g"), -1, member_id="") is NO_PARTITION_CHECK
    assert _commit(_group(), -1, member_id="", transactional=True) is NO_PARTITION_CHECK
    with pytest.raises(ProtocolError):
        _commit(_group(), -1, member_id="")


def test_offset_fetch_needs_the_exact_member_epoch() -> None:
    """``validateOffsetFetch``: a fetch without member passes; a member must give exactly its epoch."""
    group = _group()
    validate_offset_fetch(group, member_id=None, member_epoch=-1)
    validate_offset_fetch(group, member_id="m", member_epoch=5)
    with pytest.raises(ProtocolError) as raised:
        validate_offset_fetch(group, member_id="m", member_epoch=4)
    assert str(raised.value) == ("STALE_MEMBER_EPOCH: The received member epoch 4 does not match the expected member "
                                 "epoch 5.")
