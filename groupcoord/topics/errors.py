"""Typed errors of the topic catalog and the topic log, each carrying the Kafka error code it maps to.

The codes are Kafka's numbers, so the wire endpoint can answer with them unchanged and the CLI can print the message
as one line.
"""

from __future__ import annotations


class TopicError(Exception):
    """Base class: a topic request was refused; ``error_code`` is the Kafka error code to answer with."""

    error_code: int = -1
    error_name: str = "UNKNOWN_SERVER_ERROR"


class UnknownTopicOrPartitionError(TopicError):
    """The topic is not in the catalog, or the partition is outside its partition count."""

    error_code = 3
    error_name = "UNKNOWN_TOPIC_OR_PARTITION"


class OffsetOutOfRangeError(TopicError):
    """A read asked for an offset below the log start or above the log end."""

    error_code = 1
    error_name = "OFFSET_OUT_OF_RANGE"


class RequestTimedOutError(TopicError):
    """A conditional commit kept losing to concurrent writers until its deadline passed."""

    error_code = 7
    error_name = "REQUEST_TIMED_OUT"


class InvalidTopicError(TopicError):
    """The topic name breaks Kafka's rule (``[a-zA-Z0-9._-]{1,249}``, not ``.`` or ``..``) or collides."""

    error_code = 17
    error_name = "INVALID_TOPIC_EXCEPTION"


class TopicAlreadyExistsError(TopicError):
    """A topic of that name is already in the catalog."""

    error_code = 36
    error_name = "TOPIC_ALREADY_EXISTS"


class InvalidPartitionsError(TopicError):
    """The partition count is below 1, or an alter would not grow the topic."""

    error_code = 37
    error_name = "INVALID_PARTITIONS"
