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

    UNKNOWN_SERVER_ERROR = ErrorCode(
        -1, "UNKNOWN_SERVER_ERROR", False,
        "Something failed on the coordinator that no other code describes.")
    NONE = ErrorCode(0, "NONE", False, "Success.")
    OFFSET_OUT_OF_RANGE = ErrorCode(
        1, "OFFSET_OUT_OF_RANGE", False,
        "The offset lies outside the partition's log-start to log-end range.")
    CORRUPT_MESSAGE = ErrorCode(
        2, "CORRUPT_MESSAGE", True,
        "A record batch failed its CRC check or does not parse; the producer may resend it.")
    UNKNOWN_TOPIC_OR_PARTITION = ErrorCode(
        3, "UNKNOWN_TOPIC_OR_PARTITION", True,
        "No such topic or partition in the catalog.")
    NOT_LEADER_OR_FOLLOWER = ErrorCode(
        6, "NOT_LEADER_OR_FOLLOWER", True,
        "This process no longer serves the partition (it is stepping down); refresh metadata and retry.")
    REQUEST_TIMED_OUT = ErrorCode(7, "REQUEST_TIMED_OUT", True, "The operation did not finish within its time limit.")
    OFFSET_METADATA_TOO_LARGE = ErrorCode(
        12, "OFFSET_METADATA_TOO_LARGE", False,
        "The commit's metadata string exceeds offset.metadata.max.bytes.")
    COORDINATOR_LOAD_IN_PROGRESS = ErrorCode(
        14, "COORDINATOR_LOAD_IN_PROGRESS", True,
        "The coordinator is still replaying its log; retry shortly.")
    COORDINATOR_NOT_AVAILABLE = ErrorCode(
        15, "COORDINATOR_NOT_AVAILABLE", True,
        "The coordinator cannot serve right now (storage down or stepping down).")
    NOT_COORDINATOR = ErrorCode(
        16, "NOT_COORDINATOR", True,
        "This process does not hold the coordinator lease; look the coordinator up again.")
    INVALID_TOPIC_EXCEPTION = ErrorCode(
        17, "INVALID_TOPIC_EXCEPTION", False,
        "The topic name breaks Kafka's naming rule.")
    INVALID_REQUIRED_ACKS = ErrorCode(
        21, "INVALID_REQUIRED_ACKS", False, "A Produce request's acks is not 0, 1 or -1.")
    INVALID_TIMESTAMP = ErrorCode(
        32, "INVALID_TIMESTAMP", False, "A producer's record batch claims LogAppendTime, which only the log may set.")
    ILLEGAL_GENERATION = ErrorCode(
        22, "ILLEGAL_GENERATION", False,
        "The request names a generation other than the group's current one.")
    INCONSISTENT_GROUP_PROTOCOL = ErrorCode(
        23, "INCONSISTENT_GROUP_PROTOCOL", False,
        "The member's protocol type or protocols do not match the group's, or it offered none.")
    INVALID_GROUP_ID = ErrorCode(24, "INVALID_GROUP_ID", False, "The group id is empty or otherwise unusable.")
    UNKNOWN_MEMBER_ID = ErrorCode(25, "UNKNOWN_MEMBER_ID", False, "The group has no member with this id.")
    INVALID_SESSION_TIMEOUT = ErrorCode(
        26, "INVALID_SESSION_TIMEOUT", False,
        "The session timeout is outside group.min.session.timeout.ms to group.max.session.timeout.ms.")
    REBALANCE_IN_PROGRESS = ErrorCode(
        27, "REBALANCE_IN_PROGRESS", False,
        "The group is rebalancing; the member must rejoin.")
    INVALID_COMMIT_OFFSET_SIZE = ErrorCode(
        28, "INVALID_COMMIT_OFFSET_SIZE", False,
        "The offset commit's size is not acceptable.")
    UNSUPPORTED_SASL_MECHANISM = ErrorCode(
        33, "UNSUPPORTED_SASL_MECHANISM", False, "The listener does not take the client's SASL mechanism.")
    ILLEGAL_SASL_STATE = ErrorCode(
        34, "ILLEGAL_SASL_STATE", False, "A SASL request that is not expected in the connection's state.")
    SASL_AUTHENTICATION_FAILED = ErrorCode(
        58, "SASL_AUTHENTICATION_FAILED", False, "SASL authentication failed (wrong or unknown credentials).")
    RESOURCE_NOT_FOUND = ErrorCode(91, "RESOURCE_NOT_FOUND", False, "The user (or other resource) does not exist.")
    UNACCEPTABLE_CREDENTIAL = ErrorCode(
        93, "UNACCEPTABLE_CREDENTIAL", False, "The credential is not acceptable (iterations out of range, empty "
        "user name...).")
    DUPLICATE_RESOURCE = ErrorCode(
        92, "DUPLICATE_RESOURCE", False, "A request names the same resource twice.")
    UNSUPPORTED_VERSION = ErrorCode(35, "UNSUPPORTED_VERSION", False, "This endpoint does not speak that API version.")
    OUT_OF_ORDER_SEQUENCE_NUMBER = ErrorCode(
        45, "OUT_OF_ORDER_SEQUENCE_NUMBER", False,
        "An idempotent producer's batch does not follow the last sequence number this partition has of it.")
    INVALID_PRODUCER_EPOCH = ErrorCode(
        47, "INVALID_PRODUCER_EPOCH", False,
        "An idempotent producer's batch carries an older epoch than the partition has already seen.")
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = ErrorCode(
        53, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", False,
        "The producer may not use a transactional id here (this endpoint has no transaction coordinator).")
    UNSUPPORTED_COMPRESSION_TYPE = ErrorCode(
        76, "UNSUPPORTED_COMPRESSION_TYPE", False,
        "The record batch's compression codec is unknown, or not allowed at this request version.")
    INVALID_RECORD = ErrorCode(
        87, "INVALID_RECORD", False,
        "The record batch breaks a rule of the broker (magic, batch count, transactional or control batches).")
    TOPIC_ALREADY_EXISTS = ErrorCode(36, "TOPIC_ALREADY_EXISTS", False, "A topic of this name exists already.")
    INVALID_PARTITIONS = ErrorCode(
        37, "INVALID_PARTITIONS", False,
        "The partition count is not allowed (below 1, or not above the current count).")
    INVALID_REPLICATION_FACTOR = ErrorCode(
        38, "INVALID_REPLICATION_FACTOR", False, "The replication factor cannot be reached: there is one broker.")
    INVALID_REPLICA_ASSIGNMENT = ErrorCode(
        39, "INVALID_REPLICA_ASSIGNMENT", False, "A replica assignment names a broker other than this one (0).")
    INVALID_CONFIG = ErrorCode(40, "INVALID_CONFIG", False, "A topic config groupcoord does not keep at that value.")
    TOPIC_AUTHORIZATION_FAILED = ErrorCode(
        29, "TOPIC_AUTHORIZATION_FAILED", False, "The principal may not perform this operation on the topic (ACLs).")
    GROUP_AUTHORIZATION_FAILED = ErrorCode(
        30, "GROUP_AUTHORIZATION_FAILED", False, "The principal may not perform this operation on the group (ACLs).")
    CLUSTER_AUTHORIZATION_FAILED = ErrorCode(
        31, "CLUSTER_AUTHORIZATION_FAILED", False,
        "The principal may not perform this operation on the cluster (ACLs).")
    INVALID_REQUEST = ErrorCode(
        42, "INVALID_REQUEST", False,
        "The request is malformed or not valid for this endpoint.")
    NON_EMPTY_GROUP = ErrorCode(68, "NON_EMPTY_GROUP", False, "The group still has members.")
    GROUP_ID_NOT_FOUND = ErrorCode(69, "GROUP_ID_NOT_FOUND", False, "No group with this id exists.")
    FETCH_SESSION_ID_NOT_FOUND = ErrorCode(
        70, "FETCH_SESSION_ID_NOT_FOUND", True,
        "The fetch session is unknown (this endpoint keeps no fetch sessions).")
    MEMBER_ID_REQUIRED = ErrorCode(
        79, "MEMBER_ID_REQUIRED", False,
        "A new member must rejoin with the member id it was just given (KIP-394).")
    GROUP_MAX_SIZE_REACHED = ErrorCode(
        81, "GROUP_MAX_SIZE_REACHED", False,
        "The group already has group.max.size members.")
    FENCED_INSTANCE_ID = ErrorCode(
        82, "FENCED_INSTANCE_ID", False,
        "Another member now holds this group.instance.id; this member id is fenced (KIP-345).")
    GROUP_SUBSCRIBED_TO_TOPIC = ErrorCode(
        86, "GROUP_SUBSCRIBED_TO_TOPIC", False,
        "The group still consumes this topic, so its offsets cannot be deleted.")
    TOPIC_DELETION_DISABLED = ErrorCode(
        73, "TOPIC_DELETION_DISABLED", False, "Topics are kept for good (as with Kafka's delete.topic.enable=false).")
    UNKNOWN_TOPIC_ID = ErrorCode(100, "UNKNOWN_TOPIC_ID", True, "No topic with this id in the catalog.")
    FENCED_MEMBER_EPOCH = ErrorCode(
        110, "FENCED_MEMBER_EPOCH", False,
        "The heartbeat's member epoch is not one the coordinator accepts; the member drops its partitions and "
        "rejoins.")
    UNRELEASED_INSTANCE_ID = ErrorCode(
        111, "UNRELEASED_INSTANCE_ID", False,
        "Another member still holds this group.instance.id; it must leave (epoch -2) before this one may join.")
    UNSUPPORTED_ASSIGNOR = ErrorCode(
        112, "UNSUPPORTED_ASSIGNOR", False, "The coordinator has no server assignor of that name.")
    STALE_MEMBER_EPOCH = ErrorCode(
        113, "STALE_MEMBER_EPOCH", False,
        "The member epoch of the commit or fetch is not the member's; retry after the next heartbeat answers.")
    INVALID_REGULAR_EXPRESSION = ErrorCode(
        128, "INVALID_REGULAR_EXPRESSION", False, "The subscription's regular expression does not compile.")


def _collect() -> Mapping[int, ErrorCode]:
    found = {v.code: v for v in vars(Errors).values() if isinstance(v, ErrorCode)}
    return MappingProxyType(dict(sorted(found.items())))


ERRORS_BY_CODE: Mapping[int, ErrorCode] = _collect()
"""Every known error, by wire code."""


def error_for_code(code: int) -> ErrorCode:
    """The error with wire ``code``; an unknown code maps to ``UNKNOWN_SERVER_ERROR``, as in Kafka."""
    return ERRORS_BY_CODE.get(code, Errors.UNKNOWN_SERVER_ERROR)


class ProtocolError(Exception):
    """A request failed with a Kafka error; raised by ``throw_if_*`` helpers, mapped to a response code."""

    def __init__(self, error: ErrorCode, message: str = "") -> None:
        super().__init__(f"{error.name}: {message}" if message else error.name)
        self.error = error
        self.message = message
