"""Typed errors of the topic catalog and the topic log, each a :class:`~groupcoord.protocol.errors.ProtocolError`.

Each carries the Kafka error it maps to (``error``, and ``error_code`` for its number), so the wire endpoint's one
mapper answers with it unchanged. ``str(exc)`` is the plain one-line message (without the code name), which the CLI
prints after ``groupcoord: error:``.
"""

from __future__ import annotations

from typing import ClassVar

from groupcoord.protocol.errors import ErrorCode, Errors, ProtocolError


class TopicError(ProtocolError):
    """Base class: a topic request was refused with the Kafka error ``kafka_error``."""

    kafka_error: ClassVar[ErrorCode] = Errors.UNKNOWN_SERVER_ERROR

    def __init__(self, message: str) -> None:
        super().__init__(self.kafka_error, message)
        self.message = message

    @property
    def error_code(self) -> int:
        """The Kafka error code number."""
        return self.error.code

    def __str__(self) -> str:
        return self.message


class UnknownTopicOrPartitionError(TopicError):
    """The topic is not in the catalog, or the partition is outside its partition count."""

    kafka_error = Errors.UNKNOWN_TOPIC_OR_PARTITION


class OffsetOutOfRangeError(TopicError):
    """A read asked for an offset below the log start or above the log end."""

    kafka_error = Errors.OFFSET_OUT_OF_RANGE


class RequestTimedOutError(TopicError):
    """A conditional commit kept losing to concurrent writers until its deadline passed."""

    kafka_error = Errors.REQUEST_TIMED_OUT


class InvalidTopicError(TopicError):
    """The topic name breaks Kafka's rule (``[a-zA-Z0-9._-]{1,249}``, not ``.`` or ``..``) or collides."""

    kafka_error = Errors.INVALID_TOPIC_EXCEPTION


class TopicAlreadyExistsError(TopicError):
    """A topic of that name is already in the catalog."""

    kafka_error = Errors.TOPIC_ALREADY_EXISTS


class InvalidPartitionsError(TopicError):
    """The partition count is below 1, or an alter would not grow the topic."""

    kafka_error = Errors.INVALID_PARTITIONS


class OutOfOrderSequenceError(TopicError):
    """An idempotent producer's batch does not follow the last sequence the partition has of that producer."""

    kafka_error = Errors.OUT_OF_ORDER_SEQUENCE_NUMBER


class InvalidProducerEpochError(TopicError):
    """An idempotent producer's batch carries an older producer epoch than the partition has seen."""

    kafka_error = Errors.INVALID_PRODUCER_EPOCH
