"""Error codes and the ConsumerProtocol codec (checked against kafka-python's own encoding)."""

from __future__ import annotations

from typing import Any

import pytest

from groupcoord.protocol import ERRORS_BY_CODE, Errors, error_for_code
from groupcoord.protocol.consumer_protocol import (
    Assignment,
    ConsumerProtocolError,
    Subscription,
    TopicPartitions,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

KAFKA_CODES = {
    "NONE": 0, "UNKNOWN_SERVER_ERROR": -1, "INVALID_REQUEST": 42, "UNSUPPORTED_VERSION": 35,
    "TOPIC_AUTHORIZATION_FAILED": 29, "GROUP_AUTHORIZATION_FAILED": 30, "CLUSTER_AUTHORIZATION_FAILED": 31,
    "COORDINATOR_LOAD_IN_PROGRESS": 14, "COORDINATOR_NOT_AVAILABLE": 15, "NOT_COORDINATOR": 16,
    "OFFSET_OUT_OF_RANGE": 1, "UNKNOWN_TOPIC_OR_PARTITION": 3, "OFFSET_METADATA_TOO_LARGE": 12,
    "INVALID_TOPIC_EXCEPTION": 17, "INVALID_COMMIT_OFFSET_SIZE": 28, "TOPIC_ALREADY_EXISTS": 36,
    "INVALID_PARTITIONS": 37, "ILLEGAL_GENERATION": 22, "INCONSISTENT_GROUP_PROTOCOL": 23, "INVALID_GROUP_ID": 24,
    "UNKNOWN_MEMBER_ID": 25, "INVALID_SESSION_TIMEOUT": 26, "REBALANCE_IN_PROGRESS": 27, "NON_EMPTY_GROUP": 68,
    "GROUP_ID_NOT_FOUND": 69, "MEMBER_ID_REQUIRED": 79, "GROUP_MAX_SIZE_REACHED": 81, "FENCED_INSTANCE_ID": 82,
    "GROUP_SUBSCRIBED_TO_TOPIC": 86, "REQUEST_TIMED_OUT": 7, "FETCH_SESSION_ID_NOT_FOUND": 70,
    # Produce and InitProducerId (issue 21)
    "CORRUPT_MESSAGE": 2, "NOT_LEADER_OR_FOLLOWER": 6, "INVALID_REQUIRED_ACKS": 21, "INVALID_TIMESTAMP": 32,
    "OUT_OF_ORDER_SEQUENCE_NUMBER": 45, "INVALID_PRODUCER_EPOCH": 47, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED": 53,
    "UNSUPPORTED_COMPRESSION_TYPE": 76, "INVALID_RECORD": 87,
    # consumer groups (KIP-848, issue 30)
    "FENCED_MEMBER_EPOCH": 110, "UNRELEASED_INSTANCE_ID": 111, "UNSUPPORTED_ASSIGNOR": 112, "UNKNOWN_TOPIC_ID": 100,
    "STALE_MEMBER_EPOCH": 113, "INVALID_REGULAR_EXPRESSION": 128,
    # the topic admin APIs (issue 30 §1b)
    "INVALID_REPLICATION_FACTOR": 38, "INVALID_REPLICA_ASSIGNMENT": 39, "INVALID_CONFIG": 40,
    "TOPIC_DELETION_DISABLED": 73,
    # authentication and users (issue 31)
    "UNSUPPORTED_SASL_MECHANISM": 33, "ILLEGAL_SASL_STATE": 34, "SASL_AUTHENTICATION_FAILED": 58,
    "RESOURCE_NOT_FOUND": 91, "DUPLICATE_RESOURCE": 92, "UNACCEPTABLE_CREDENTIAL": 93,
}
KAFKA_PYTHON_RETRIABILITY_DIFFERS = {"CORRUPT_MESSAGE"}
"""Errors whose retriability kafka-python gets wrong: Kafka's ``CorruptRecordException`` is a
``RetriableException`` (a producer resends the batch), kafka-python's ``CorruptRecordError`` is not retriable."""


def test_error_codes_match_kafka() -> None:
    """Every issue-listed error has Kafka's number and name, and the lookup finds it."""
    assert {e.name: e.code for e in ERRORS_BY_CODE.values()} == KAFKA_CODES
    for name, code in KAFKA_CODES.items():
        assert error_for_code(code).name == name
    assert error_for_code(9999) is Errors.UNKNOWN_SERVER_ERROR
    assert Errors.NOT_COORDINATOR.retriable and not Errors.ILLEGAL_GENERATION.retriable


def test_error_codes_agree_with_kafka_python() -> None:
    """kafka-python's error classes have the same numbers and retriability (tests may import it; the core not)."""
    from kafka import errors as kafka_errors

    by_code: dict[int, Any] = {cls.errno: cls for cls in vars(kafka_errors).values()
               if isinstance(cls, type) and issubclass(cls, kafka_errors.BrokerResponseError) and hasattr(cls, "errno")}
    for error in ERRORS_BY_CODE.values():
        if error.code in by_code:
            agrees = bool(by_code[error.code].retriable) == error.retriable
            assert agrees != (error.name in KAFKA_PYTHON_RETRIABILITY_DIFFERS), error.name
    assert Errors.CORRUPT_MESSAGE.retriable


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_subscription_round_trips_each_version(version: int) -> None:
    """Fields newer than the version are dropped, the rest survive."""
    full = Subscription(version=version, topics=("a", "b"), user_data=b"u",
                        owned_partitions=(TopicPartitions("a", (0, 2)),), generation_id=7, rack_id="r1")
    decoded = decode_subscription(encode_subscription(full))
    assert decoded.topics == ("a", "b") and decoded.user_data == b"u"
    assert decoded.owned_partitions == (full.owned_partitions if version >= 1 else ())
    assert decoded.generation_id == (7 if version >= 2 else -1)
    assert decoded.rack_id == ("r1" if version >= 3 else None)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_codec_matches_kafka_python_bytes(version: int) -> None:
    """Our Subscription bytes equal kafka-python's for every version, and our Assignment decodes there."""
    from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

    owned = [ConsumerProtocolSubscription.TopicPartition(topic="t1", partitions=[0, 2])]
    theirs = ConsumerProtocolSubscription(version=version, topics=["t1", "t2"], user_data=b"u",
                                          owned_partitions=owned, generation_id=5, rack_id="r").encode()
    ours = encode_subscription(Subscription(version=version, topics=("t1", "t2"), user_data=b"u",
                                            owned_partitions=(TopicPartitions("t1", (0, 2)),), generation_id=5,
                                            rack_id="r"))
    assert ours == theirs
    assert decode_subscription(theirs).topics == ("t1", "t2")
    assignment = encode_assignment(Assignment(version=version, partitions=(TopicPartitions("t1", (0, 1)),),
                                              user_data=b""))
    decoded = ConsumerProtocolAssignment.decode(assignment)
    assert [(tp.topic, list(tp.partitions)) for tp in decoded.assigned_partitions] == [("t1", [0, 1])]


def test_malformed_subscription_is_refused() -> None:
    """Truncated bytes raise ConsumerProtocolError; an empty assignment decodes to nothing owned."""
    with pytest.raises(ConsumerProtocolError):
        decode_subscription(b"\x00\x01\x00\x00\x00\x05")
    assert decode_assignment(b"").partitions == ()
