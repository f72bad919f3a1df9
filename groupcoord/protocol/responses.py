"""Frozen response types of the classic group and offset APIs and of ConsumerGroupHeartbeat (KIP-848), mirroring
Kafka's latest field sets."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple
from uuid import UUID

from groupcoord.protocol.errors import ErrorCode, Errors
from groupcoord.security.acls import AclBinding


@dataclass(frozen=True)
class JoinGroupMember:
    """One member as the leader sees it in its JoinGroup response."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, kw_only=True)
class JoinGroupResponse:
    """JoinGroup result. Only the leader gets ``members``; ``skip_assignment`` tells it not to run an assignor."""

    error: ErrorCode
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False
    member_id: str = ""
    members: tuple[JoinGroupMember, ...] = ()


@dataclass(frozen=True, kw_only=True)
class SyncGroupResponse:
    """SyncGroup result: this member's assignment bytes."""

    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(frozen=True, kw_only=True)
class HeartbeatResponse:
    """Heartbeat result."""

    error: ErrorCode


@dataclass(frozen=True)
class LeaveGroupMemberResponse:
    """The outcome for one member of a LeaveGroup batch."""

    member_id: str
    group_instance_id: str | None
    error: ErrorCode


@dataclass(frozen=True, kw_only=True)
class LeaveGroupResponse:
    """LeaveGroup result: a top-level error and one entry per requested member."""

    error: ErrorCode
    members: tuple[LeaveGroupMemberResponse, ...] = ()


class PartitionError(NamedTuple):
    """The outcome for one partition (a named tuple, built once per partition of a commit: see
    :class:`~groupcoord.protocol.requests.OffsetCommitPartition`)."""

    partition: int
    error: ErrorCode


@dataclass(frozen=True)
class TopicPartitionErrors:
    """Per-partition outcomes of one topic (OffsetCommit and OffsetDelete responses)."""

    name: str
    partitions: tuple[PartitionError, ...]


@dataclass(frozen=True, kw_only=True)
class OffsetCommitResponse:
    """OffsetCommit result: an error per partition."""

    topics: tuple[TopicPartitionErrors, ...]


@dataclass(frozen=True)
class OffsetFetchPartition:
    """One committed offset; ``offset=-1`` (and empty metadata) where nothing is committed."""

    partition: int
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    error: ErrorCode = Errors.NONE


@dataclass(frozen=True)
class OffsetFetchTopicResponse:
    """The committed offsets of one topic."""

    name: str
    partitions: tuple[OffsetFetchPartition, ...]


@dataclass(frozen=True, kw_only=True)
class OffsetFetchResponse:
    """OffsetFetch result."""

    error: ErrorCode
    topics: tuple[OffsetFetchTopicResponse, ...] = ()


@dataclass(frozen=True, kw_only=True)
class OffsetDeleteResponse:
    """OffsetDelete result: a group-level error, and an error per partition."""

    error: ErrorCode
    topics: tuple[TopicPartitionErrors, ...] = ()


@dataclass(frozen=True)
class DescribedMember:
    """A member in DescribeGroups; metadata and assignment are only filled for a Stable group."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, kw_only=True)
class DescribedGroup:
    """One group in DescribeGroups. ``protocol`` is the selected protocol, only while Stable (as in Kafka)."""

    error: ErrorCode
    group_id: str
    state: str
    error_message: str | None = None
    protocol_type: str = ""
    protocol: str = ""
    members: tuple[DescribedMember, ...] = ()


@dataclass(frozen=True, kw_only=True)
class DescribeGroupsResponse:
    """DescribeGroups result, one entry per requested group."""

    groups: tuple[DescribedGroup, ...]


@dataclass(frozen=True)
class ListedGroup:
    """One group in ListGroups; ``group_type`` is Kafka's ``classic`` or ``consumer`` (ListGroups v5)."""

    group_id: str
    protocol_type: str
    state: str
    group_type: str = "classic"


@dataclass(frozen=True, kw_only=True)
class ListGroupsResponse:
    """ListGroups result."""

    error: ErrorCode
    groups: tuple[ListedGroup, ...] = ()


@dataclass(frozen=True)
class DeletedGroup:
    """The outcome of deleting one group."""

    group_id: str
    error: ErrorCode


@dataclass(frozen=True, kw_only=True)
class DeleteGroupsResponse:
    """DeleteGroups result, one entry per requested group."""

    results: tuple[DeletedGroup, ...]


@dataclass(frozen=True, kw_only=True)
class ConsumerGroupHeartbeatResponse:
    """ConsumerGroupHeartbeat (API key 68) result.

    ``assignment`` is the member's assigned partitions by topic id, sent when they changed or the request was a
    full one, else ``None`` (Kafka's null: "unchanged"). ``heartbeat_interval_ms`` tells the member when to beat
    again.
    """

    error: ErrorCode
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Mapping[UUID, frozenset[int]] | None = field(default=None, hash=False)


@dataclass(frozen=True, kw_only=True)
class DescribedConsumerMember:
    """One member of a consumer group in ConsumerGroupDescribe: its partitions now (``assignment``) and in the
    group's target, by topic id; ``uses_classic_protocol`` for a member of the classic protocol (its
    ``MemberType``)."""

    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: Mapping[UUID, frozenset[int]] = field(default_factory=dict, hash=False)
    target_assignment: Mapping[UUID, frozenset[int]] = field(default_factory=dict, hash=False)
    uses_classic_protocol: bool = False


@dataclass(frozen=True, kw_only=True)
class DescribedConsumerGroup:
    """One group in ConsumerGroupDescribe; ``topic_names`` names the topic ids of its members' assignments."""

    error: ErrorCode
    group_id: str
    error_message: str | None = None
    state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: tuple[DescribedConsumerMember, ...] = ()
    topic_names: Mapping[UUID, str] = field(default_factory=dict, hash=False)


@dataclass(frozen=True, kw_only=True)
class ConsumerGroupDescribeResponse:
    """ConsumerGroupDescribe (API key 69) result, one entry per requested group."""

    groups: tuple[DescribedConsumerGroup, ...]


@dataclass(frozen=True)
class UserResult:
    """The outcome of one user's credential changes: an error, with Kafka's message when it has one."""

    user: str
    error: ErrorCode
    message: str | None = None


@dataclass(frozen=True)
class AlterCredentialsResponse:
    """AlterUserScramCredentials: one result per user named in the request, in first-named order."""

    results: tuple[UserResult, ...]


@dataclass(frozen=True)
class AclResult:
    """The outcome of one ACL creation or deletion filter: an error with Kafka's message, and for a filter the
    bindings it deleted."""

    error: ErrorCode
    message: str | None = None
    deleted: tuple[AclBinding, ...] = ()


@dataclass(frozen=True)
class AlterAclsResponse:
    """CreateAcls or DeleteAcls: one result per creation, then one per deletion filter, in request order."""

    created: tuple[AclResult, ...] = ()
    deleted: tuple[AclResult, ...] = ()


GroupResponse = (
    JoinGroupResponse | SyncGroupResponse | HeartbeatResponse | LeaveGroupResponse | OffsetCommitResponse
    | OffsetFetchResponse | OffsetDeleteResponse | DescribeGroupsResponse | ListGroupsResponse | DeleteGroupsResponse
    | ConsumerGroupHeartbeatResponse | ConsumerGroupDescribeResponse | AlterCredentialsResponse | AlterAclsResponse
)
"""Any response the coordinator produces."""
