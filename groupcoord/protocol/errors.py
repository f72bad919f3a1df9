"""Kafka's protocol error codes, with their numbers, names and retriability, and a lookup from code.

Every response the coordinator produces carries one of these; the wire layer writes ``error.code``. Handlers may
raise :class:`ProtocolError` from ``throw_if_*`` helpers; one mapper at the handler edge turns it into a response.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class ErrorCode:
    """One Kafka error: its wire ``code``, its ``name`` and whether a client may simply retry."""

    code: int
    name: str
    retriable: bool
    description: str

    @property
    def is_error(self) -> bool:
        """False only for ``NONE``."""
        return self.code != 0

    def __str__(self) -> str:
        return self.name


class Errors:
    """The error codes groupcoord uses, as class attributes named like Kafka's ``Errors`` enum."""

    UNKNOWN_SERVER_ERROR = ErrorCode(-1, "UNKNOWN_SERVER_ERROR", False,
                                     "The server experienced an unexpected error when processing the request.")
    NONE = ErrorCode(0, "NONE", False, "No error.")
    OFFSET_OUT_OF_RANGE = ErrorCode(1, "OFFSET_OUT_OF_RANGE", False,
                                    "The requested offset is not within the range of offsets kept by the server.")
    UNKNOWN_TOPIC_OR_PARTITION = ErrorCode(3, "UNKNOWN_TOPIC_OR_PARTITION", True,
                                           "This server does not host this topic-partition.")
    OFFSET_METADATA_TOO_LARGE = ErrorCode(12, "OFFSET_METADATA_TOO_LARGE", False,
                                          "The metadata field of the offset request was too large.")
    COORDINATOR_LOAD_IN_PROGRESS = ErrorCode(14, "COORDINATOR_LOAD_IN_PROGRESS", True,
                                             "The coordinator is loading and hence can't process requests.")
    COORDINATOR_NOT_AVAILABLE = ErrorCode(15, "COORDINATOR_NOT_AVAILABLE", True, "The coordinator is not available.")
    NOT_COORDINATOR = ErrorCode(16, "NOT_COORDINATOR", True, "This is not the correct coordinator.")
    INVALID_TOPIC_EXCEPTION = ErrorCode(17, "INVALID_TOPIC_EXCEPTION", False,
                                        "The request attempted to perform an operation on an invalid topic.")
    ILLEGAL_GENERATION = ErrorCode(22, "ILLEGAL_GENERATION", False,
                                   "Specified group generation id is not valid.")
    INCONSISTENT_GROUP_PROTOCOL = ErrorCode(
        23, "INCONSISTENT_GROUP_PROTOCOL", False,
        "The group member's supported protocols are incompatible with those of existing members "
        "or first group member tried to join with empty protocol type or empty protocol list.")
    INVALID_GROUP_ID = ErrorCode(24, "INVALID_GROUP_ID", False, "The configured groupId is invalid.")
    UNKNOWN_MEMBER_ID = ErrorCode(25, "UNKNOWN_MEMBER_ID", False,
                                  "The coordinator is not aware of this member.")
    INVALID_SESSION_TIMEOUT = ErrorCode(
        26, "INVALID_SESSION_TIMEOUT", False,
        "The session timeout is not within the range allowed by the broker "
        "(as configured by group.min.session.timeout.ms and group.max.session.timeout.ms).")
    REBALANCE_IN_PROGRESS = ErrorCode(27, "REBALANCE_IN_PROGRESS", False,
                                      "The group is rebalancing, so a rejoin is needed.")
    INVALID_COMMIT_OFFSET_SIZE = ErrorCode(28, "INVALID_COMMIT_OFFSET_SIZE", False,
                                           "The committing offset data size is not valid.")
    UNSUPPORTED_VERSION = ErrorCode(35, "UNSUPPORTED_VERSION", False,
                                    "The version of API is not supported.")
    TOPIC_ALREADY_EXISTS = ErrorCode(36, "TOPIC_ALREADY_EXISTS", False, "Topic with this name already exists.")
    INVALID_PARTITIONS = ErrorCode(37, "INVALID_PARTITIONS", False, "Number of partitions is below 1.")
    INVALID_REQUEST = ErrorCode(
        42, "INVALID_REQUEST", False,
        "This most likely occurs because of a request being malformed by the client library or the message "
        "was sent to an incompatible broker.")
    NON_EMPTY_GROUP = ErrorCode(68, "NON_EMPTY_GROUP", False, "The group is not empty.")
    GROUP_ID_NOT_FOUND = ErrorCode(69, "GROUP_ID_NOT_FOUND", False, "The group id does not exist.")
    MEMBER_ID_REQUIRED = ErrorCode(
        79, "MEMBER_ID_REQUIRED", False,
        "The group member needs to have a valid member id before actually entering a consumer group.")
    GROUP_MAX_SIZE_REACHED = ErrorCode(81, "GROUP_MAX_SIZE_REACHED", False,
                                       "The consumer group has reached its max size.")
    FENCED_INSTANCE_ID = ErrorCode(
        82, "FENCED_INSTANCE_ID", False,
        "The broker rejected this static consumer since another consumer with the same group.instance.id "
        "has registered with a different member.id.")
    GROUP_SUBSCRIBED_TO_TOPIC = ErrorCode(86, "GROUP_SUBSCRIBED_TO_TOPIC", False,
                                          "The consumer group is actively subscribed to the topic.")


def _collect() -> Mapping[int, ErrorCode]:
    found = {v.code: v for v in vars(Errors).values() if isinstance(v, ErrorCode)}
    return MappingProxyType(dict(sorted(found.items())))


ERRORS_BY_CODE: Mapping[int, ErrorCode] = _collect()
"""Every known error, by wire code."""


def error_for_code(code: int) -> ErrorCode:
    """The error with wire ``code``; an unknown code maps to ``UNKNOWN_SERVER_ERROR``, as in Kafka."""
    return ERRORS_BY_CODE.get(code, Errors.UNKNOWN_SERVER_ERROR)


def error_for_name(name: str) -> ErrorCode:
    """The error named ``name`` (``"ILLEGAL_GENERATION"``); raises ``KeyError`` for an unknown name."""
    for error in ERRORS_BY_CODE.values():
        if error.name == name:
            return error
    raise KeyError(name)


class ProtocolError(Exception):
    """A request failed with a Kafka error; raised by ``throw_if_*`` helpers, mapped to a response code."""

    def __init__(self, error: ErrorCode, message: str = "") -> None:
        super().__init__(f"{error.name}: {message}" if message else error.name)
        self.error = error
