"""Topic errors are protocol errors carrying the shared Kafka codes, with a plain one-line message."""

from __future__ import annotations

import pytest

from groupcoord.protocol.errors import Errors, ProtocolError
from groupcoord.topics import (
    InvalidPartitionsError,
    InvalidTopicError,
    OffsetOutOfRangeError,
    RequestTimedOutError,
    TopicAlreadyExistsError,
    TopicError,
    UnknownTopicOrPartitionError,
)


@pytest.mark.parametrize(("error", "name", "code"), [
    (UnknownTopicOrPartitionError, "UNKNOWN_TOPIC_OR_PARTITION", 3),
    (OffsetOutOfRangeError, "OFFSET_OUT_OF_RANGE", 1),
    (RequestTimedOutError, "REQUEST_TIMED_OUT", 7),
    (InvalidTopicError, "INVALID_TOPIC_EXCEPTION", 17),
    (TopicAlreadyExistsError, "TOPIC_ALREADY_EXISTS", 36),
    (InvalidPartitionsError, "INVALID_PARTITIONS", 37),
])
def test_each_error_maps_to_its_kafka_code(error: type[TopicError], name: str, code: int) -> None:
    exc = error("Something went wrong.")
    assert isinstance(exc, ProtocolError)
    assert (exc.error.name, exc.error.code, exc.error_code) == (name, code, code)
    assert str(exc) == "Something went wrong."


def test_codes_come_from_the_shared_protocol_errors() -> None:
    assert TopicAlreadyExistsError("x").error is Errors.TOPIC_ALREADY_EXISTS
    assert UnknownTopicOrPartitionError("x").error is Errors.UNKNOWN_TOPIC_OR_PARTITION
