"""Frozen request types of the classic group and offset APIs and of ConsumerGroupHeartbeat (KIP-848), mirroring
Kafka's latest field sets.

The wire layer maps kafka-python's decoded requests onto these; the core never sees bytes of the framing.
``None`` means "not set" (Kafka's null), ``-1`` is Kafka's "no generation" / "no timeout" sentinel.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple
from uuid import UUID

from groupcoord.protocol.errors import ErrorCode
from groupcoord.security.acls import AclBinding, AclFilter
from groupcoord.security.credentials import Credential

UNKNOWN_MEMBER_ID = ""
"""The member id a new member sends (Kafka's ``JoinGroupRequest.UNKNOWN_MEMBER_ID``)."""

NO_GENERATION = -1
"""The generation a member without group management sends (simple commits)."""

LEAVE_GROUP_MEMBER_EPOCH = -1
"""The member epoch of a heartbeat that leaves the group for good (Kafka's ``LEAVE_GROUP_MEMBER_EPOCH``)."""

LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2
"""The member epoch of a static member that leaves for a while and keeps its assignment (KIP-848)."""

JOIN_GROUP_MEMBER_EPOCH = 0
"""The member epoch of a heartbeat that joins or rejoins the group."""

CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION = 1
"""From this ConsumerGroupHeartbeat version the client generates its member id (KIP-1082), so it is never empty."""

LATEST_OFFSET_COMMIT_VERSION = 10
"""The newest OffsetCommit version groupcoord speaks; the default of :attr:`OffsetCommitRequest.api_version`."""


@dataclass(frozen=True)
class JoinGroupProtocol:
    """One protocol a member supports, with its metadata (a ConsumerProtocol Subscription for ``consumer``)."""

    name: str
    metadata: bytes


@dataclass(frozen=True, kw_only=True)
class JoinGroupRequest:
    """JoinGroup: enter (or re-enter) a group. ``rebalance_timeout_ms=-1`` means "same as the session timeout".

    Two flags say what the client's JoinGroup version can express (the wire sets them; the defaults are v9's):
    ``require_known_member_id`` (v4+, KIP-394: a new dynamic member is first handed its id with
    MEMBER_ID_REQUIRED; below v4 it joins at once) and ``supports_skip_assignment`` (v9+, KIP-814: a restarted
    static leader is told to skip the assignment; below v9 it is answered as a follower, naming the old leader).
    """

    group_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int = -1
    member_id: str = UNKNOWN_MEMBER_ID
    group_instance_id: str | None = None
    protocol_type: str
    protocols: tuple[JoinGroupProtocol, ...]
    reason: str | None = None
    client_id: str = ""
    client_host: str = ""
    require_known_member_id: bool = True
    supports_skip_assignment: bool = True


@dataclass(frozen=True)
class SyncGroupAssignment:
    """The leader's assignment for one member (a ConsumerProtocol Assignment for ``consumer``)."""

    member_id: str
    assignment: bytes


@dataclass(frozen=True, kw_only=True)
class SyncGroupRequest:
    """SyncGroup: fetch this member's assignment; the leader also submits everyone's.

    ``assignment_error`` is a groupcoord extension (seed 004, "Assignment Failure"): a leader whose assignor
    failed reports the error, and the coordinator propagates it to every member. The Kafka wire has no such field,
    so the wire layer always leaves it ``None``.
    """

    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignments: tuple[SyncGroupAssignment, ...] = ()
    assignment_error: ErrorCode | None = None


@dataclass(frozen=True, kw_only=True)
class HeartbeatRequest:
    """Heartbeat: keep the session alive and learn whether a rebalance is in progress."""

    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None


@dataclass(frozen=True)
class MemberIdentity:
    """One member to remove in a LeaveGroup batch: by ``member_id``, or by ``group_instance_id`` alone (admin)."""

    member_id: str = UNKNOWN_MEMBER_ID
    group_instance_id: str | None = None
    reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class LeaveGroupRequest:
    """LeaveGroup (batched, KIP-345): remove members from the group."""

    group_id: str
    members: tuple[MemberIdentity, ...]


class OffsetCommitPartition(NamedTuple):
    """One offset to commit. ``leader_epoch=-1`` means unknown; ``metadata`` is the client's free-form string.

    A named tuple rather than a frozen dataclass: commits carry one per partition, and a tuple is built several
    times faster (the commit path's cost is mostly per partition).
    """

    partition: int
    offset: int
    leader_epoch: int = -1
    metadata: str = ""


@dataclass(frozen=True)
class OffsetCommitTopic:
    """The offsets of one topic to commit."""

    name: str
    partitions: tuple[OffsetCommitPartition, ...]


@dataclass(frozen=True, kw_only=True)
class OffsetCommitRequest:
    """OffsetCommit. ``generation_id=-1`` with no member id is a simple (non-group-managed) commit.

    For a consumer group (KIP-848) ``generation_id`` is the member epoch (Kafka's ``GenerationIdOrMemberEpoch``),
    and ``api_version`` matters: a member of the consumer protocol must commit with v9 or above.

    ``retention_time_ms`` (versions 2-4 only) gives an explicit expiry; ``-1`` uses the broker retention (KIP-211).
    """

    group_id: str
    generation_id: int = NO_GENERATION
    member_id: str = UNKNOWN_MEMBER_ID
    group_instance_id: str | None = None
    retention_time_ms: int = -1
    topics: tuple[OffsetCommitTopic, ...]
    api_version: int = LATEST_OFFSET_COMMIT_VERSION


@dataclass(frozen=True)
class OffsetFetchTopic:
    """The partitions of one topic whose committed offsets are asked for."""

    name: str
    partitions: tuple[int, ...]


@dataclass(frozen=True, kw_only=True)
class OffsetFetchRequest:
    """OffsetFetch: ``topics=None`` asks for every committed offset of the group.

    ``member_id``/``member_epoch`` (KIP-848) only apply to the new consumer protocol; classic groups ignore them.
    """

    group_id: str
    topics: tuple[OffsetFetchTopic, ...] | None = None
    member_id: str | None = None
    member_epoch: int = -1
    require_stable: bool = False


@dataclass(frozen=True, kw_only=True)
class OffsetDeleteRequest:
    """OffsetDelete (KIP-496): remove committed offsets of topics the group no longer consumes."""

    group_id: str
    topics: tuple[OffsetFetchTopic, ...]


@dataclass(frozen=True, kw_only=True)
class DescribeGroupsRequest:
    """DescribeGroups: state, protocol and members of each group."""

    groups: tuple[str, ...]


@dataclass(frozen=True)
class ConsumerGroupDescribeRequest:
    """ConsumerGroupDescribe (API key 69): each consumer group (KIP-848) with its epochs, members and assignments."""

    groups: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class ListGroupsRequest:
    """ListGroups. ``states_filter`` (KIP-518) keeps groups in one of the named states; empty keeps all."""

    states_filter: tuple[str, ...] = ()
    types_filter: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class DeleteGroupsRequest:
    """DeleteGroups: delete empty groups and their offsets."""

    groups: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class ConsumerGroupHeartbeatRequest:
    """ConsumerGroupHeartbeat (API key 68): join, heartbeat in, or leave a consumer group (KIP-848).

    ``None`` is Kafka's null ("unchanged"). ``member_epoch`` is 0 to join, -1 to leave, -2 for a static member that
    leaves for a while, else the member's epoch. ``topic_partitions`` are the partitions the member owns, by topic
    id (``None`` when not sent). ``api_version`` is the request's version: from v1 the member id is always set.
    """

    group_id: str
    member_id: str = UNKNOWN_MEMBER_ID
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    topic_partitions: Mapping[UUID, Collection[int]] | None = field(default=None, hash=False)
    api_version: int = CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION
    client_id: str = ""
    client_host: str = ""

    @property
    def is_leave(self) -> bool:
        """True for a heartbeat that leaves (epoch -1) or, for a static member, leaves for a while (-2)."""
        return self.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH)

    @property
    def is_full(self) -> bool:
        """True for a join, or a heartbeat carrying its rebalance timeout, its subscription (names or regex) and
        its owned partitions, as a client sends after an error; its response always carries the assignment."""
        return self.member_epoch == JOIN_GROUP_MEMBER_EPOCH or (
            self.rebalance_timeout_ms != -1
            and (self.subscribed_topic_names is not None or self.subscribed_topic_regex is not None)
            and self.topic_partitions is not None)


@dataclass(frozen=True)
class CredentialChange:
    """Set ``user``'s credential for ``mechanism`` to ``credential``, or delete it (``None``)."""

    user: str
    mechanism: str
    credential: Credential | None


@dataclass(frozen=True)
class AlterCredentialsRequest:
    """AlterUserScramCredentials (API key 51), and ``groupcoord users add|remove``: credential changes, applied
    per user all or nothing, as Kafka's controller does."""

    changes: tuple[CredentialChange, ...]


@dataclass(frozen=True)
class AlterAclsRequest:
    """CreateAcls (API key 30) or DeleteAcls (31), and ``groupcoord acls add|remove``: bindings to create, filters
    whose matches to delete."""

    creations: tuple[AclBinding, ...] = ()
    deletions: tuple[AclFilter, ...] = ()


GroupRequest = (
    JoinGroupRequest | SyncGroupRequest | HeartbeatRequest | LeaveGroupRequest | OffsetCommitRequest
    | OffsetFetchRequest | OffsetDeleteRequest | DescribeGroupsRequest | ListGroupsRequest | DeleteGroupsRequest
    | ConsumerGroupHeartbeatRequest | ConsumerGroupDescribeRequest | AlterCredentialsRequest | AlterAclsRequest
)
"""Any request the coordinator handles."""
