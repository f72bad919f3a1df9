"""ConsumerGroupHeartbeat request validation, in the order and with the messages of Kafka 4.4's
``GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid``, and the group-level refusals."""

from __future__ import annotations

from dataclasses import replace

import pytest

from groupcoord.coordinator.consumer_epochs import (
    UNSUPPORTED_ASSIGNOR,
    throw_if_consumer_group_not_found,
    throw_if_group_full,
    throw_if_invalid_heartbeat,
)
from groupcoord.group.consumer_group import ConsumerGroup
from groupcoord.group.consumer_member import ConsumerGroupMember
from groupcoord.protocol.errors import ErrorCode, Errors, ProtocolError
from groupcoord.protocol.requests import ConsumerGroupHeartbeatRequest

from .scenario import ASSIGNORS, parts

JOIN = ConsumerGroupHeartbeatRequest(group_id="g", member_id="m", member_epoch=0, rebalance_timeout_ms=5000,
                                     subscribed_topic_names=("t",), topic_partitions={})
BEAT = ConsumerGroupHeartbeatRequest(group_id="g", member_id="m", member_epoch=1)

INVALID = Errors.INVALID_REQUEST
REFUSED: list[tuple[str, ConsumerGroupHeartbeatRequest, ErrorCode, str]] = [
    ("v1 always needs the member id the client made (KIP-1082)", replace(JOIN, member_id=""), INVALID,
     "MemberId can't be empty."),
    ("a heartbeat past the join needs its member id", replace(BEAT, member_id=" ", api_version=0), INVALID,
     "MemberId can't be empty."),
    ("leaving needs the member id", replace(BEAT, member_id="", member_epoch=-1, api_version=0), INVALID,
     "MemberId can't be empty."),
    ("the member id is checked before the group id", replace(JOIN, member_id="", group_id=""), INVALID,
     "MemberId can't be empty."),
    ("a blank group id", replace(BEAT, group_id="  "), INVALID, "GroupId can't be empty."),
    ("a set but empty instance id", replace(BEAT, instance_id=""), INVALID, "InstanceId can't be empty."),
    ("a set but empty rack id", replace(BEAT, rack_id=""), INVALID, "RackId can't be empty."),
    ("a join without rebalance timeout", replace(JOIN, rebalance_timeout_ms=-1), INVALID,
     "RebalanceTimeoutMs must be provided in first request."),
    ("a join that does not send its owned partitions", replace(JOIN, topic_partitions=None), INVALID,
     "TopicPartitions must be empty when (re-)joining."),
    ("a join that claims partitions", replace(JOIN, topic_partitions=parts(0)), INVALID,
     "TopicPartitions must be empty when (re-)joining."),
    ("a join with neither names nor regex", replace(JOIN, subscribed_topic_names=None), INVALID,
     "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."),
    ("a temporary leave without instance id", replace(BEAT, member_epoch=-2), INVALID, "InstanceId can't be null."),
    ("an epoch below -2", replace(BEAT, member_epoch=-3), INVALID, "MemberEpoch is invalid."),
    ("an assignor the coordinator does not have", replace(JOIN, server_assignor="sticky"), UNSUPPORTED_ASSIGNOR,
     "ServerAssignor sticky is not supported. Supported assignors: uniform, range."),
]


@pytest.mark.parametrize(("case", "request_", "error", "message"), REFUSED, ids=[row[0] for row in REFUSED])
def test_invalid_heartbeat_is_refused_with_kafkas_error_and_message(
        case: str, request_: ConsumerGroupHeartbeatRequest, error: ErrorCode, message: str) -> None:
    """Each row breaks one of Kafka's rules; the first rule broken, in Kafka's order, names the error."""
    with pytest.raises(ProtocolError) as raised:
        throw_if_invalid_heartbeat(request_, supported_assignors=ASSIGNORS)
    assert raised.value.error == error
    assert str(raised.value) == f"{error.name}: {message}"


def test_valid_heartbeats_pass() -> None:
    """A v0 join may leave the member id to the coordinator; a join may subscribe to no topic (an empty list or an
    empty regex); a regular heartbeat needs nothing but its ids and epoch; a static temporary leave needs the
    instance id."""
    accepted = [
        JOIN,
        replace(JOIN, member_id="", api_version=0),
        replace(JOIN, subscribed_topic_names=()),
        replace(JOIN, subscribed_topic_names=None, subscribed_topic_regex=""),
        replace(JOIN, server_assignor="range"),
        BEAT,
        replace(BEAT, member_epoch=-1),
        replace(BEAT, member_epoch=-2, instance_id="i", api_version=0, member_id=""),
    ]
    for request in accepted:
        throw_if_invalid_heartbeat(request, supported_assignors=ASSIGNORS)


def test_heartbeat_of_a_group_that_does_not_exist_is_group_id_not_found_unless_it_joins() -> None:
    """Kafka's ``getOrMaybeCreateConsumerGroup``: only epoch 0 creates the group."""
    throw_if_consumer_group_not_found(None, "g", 0)
    with pytest.raises(ProtocolError) as raised:
        throw_if_consumer_group_not_found(None, "g", 3)
    assert str(raised.value) == "GROUP_ID_NOT_FOUND: Consumer group g not found."


def test_full_group_refuses_newcomers_but_not_its_members() -> None:
    """Kafka's ``throwIfConsumerGroupIsFull``: a new member id is GROUP_MAX_SIZE_REACHED at ``group.consumer.max.size``,
    a member or a known instance id is not."""
    group = ConsumerGroup("g")
    group.update_member(ConsumerGroupMember(member_id="a", instance_id="i-a"))
    throw_if_group_full(group, "a", None, max_size=1)
    throw_if_group_full(group, "a2", "i-a", max_size=1)
    for newcomer in ("b", ""):
        with pytest.raises(ProtocolError) as raised:
            throw_if_group_full(group, newcomer, None, max_size=1)
        assert str(raised.value) == ("GROUP_MAX_SIZE_REACHED: The consumer group has reached its maximum capacity "
                                     "of 1 members.")
