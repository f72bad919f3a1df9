"""The group APIs a member sends, over a :class:`BrokerConnection`: wire glue between groupcoord's protocol types
(:mod:`groupcoord.protocol.requests` / :mod:`~groupcoord.protocol.responses`) and kafka-python's protocol objects at
the negotiated version. :meth:`GroupClient.call` sends any request the member's protocol machine returns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kafka.protocol.consumer import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from kafka.protocol.metadata import FindCoordinatorRequest, MetadataRequest
from kafka.structs import OffsetAndMetadata, TopicPartition

from groupcoord.member.connection import BrokerConnection
from groupcoord.protocol import requests as rq
from groupcoord.protocol.errors import ErrorCode, Errors, error_for_code
from groupcoord.protocol.responses import (
    GroupResponse,
    HeartbeatResponse,
    JoinGroupMember,
    JoinGroupResponse,
    LeaveGroupResponse,
    OffsetCommitResponse,
    OffsetFetchPartition,
    OffsetFetchResponse,
    OffsetFetchTopicResponse,
    PartitionError,
    SyncGroupResponse,
    TopicPartitionErrors,
)

# The highest version this client sends of each API (the broker's maximum may be lower).
MAX_VERSIONS = {
    "find_coordinator": 3,
    "join_group": 9,
    "sync_group": 5,
    "heartbeat": 4,
    "leave_group": 5,
    "offset_commit": 8,
    "offset_fetch": 7,
    "metadata": 9,
}

PROTOCOL_TYPE = "consumer"
_GROUP_KEY_TYPE = 0
JOIN_TIMEOUT_MARGIN_MS = 5000
"""JoinGroup may be parked for the whole rebalance timeout; the member waits this much longer (as Kafka's)."""


class GroupClient:
    """Typed group API calls on one connection (to the group's coordinator, or to a bootstrap broker)."""

    def __init__(self, connection: BrokerConnection) -> None:
        self.connection = connection

    def _version(self, request_class: object, api: str) -> int:
        return self.connection.version_for(request_class, MAX_VERSIONS[api])

    def find_coordinator(self, group_id: str) -> tuple[ErrorCode, str, int]:
        """The coordinator of ``group_id`` as ``(error, host, port)``."""
        version = self._version(FindCoordinatorRequest, "find_coordinator")
        response = self.connection.send(FindCoordinatorRequest(version=version, key=group_id, key_type=_GROUP_KEY_TYPE))
        return error_for_code(response.error_code), response.host, response.port

    def join_group(self, *, group_id: str, member_id: str, group_instance_id: str | None, session_timeout_ms: int,
                   rebalance_timeout_ms: int, protocols: Sequence[tuple[str, bytes]],
                   reason: str | None = None) -> JoinGroupResponse:
        """Join (or rejoin) the group; blocks while the coordinator parks the request during the rebalance."""
        version = self._version(JoinGroupRequest, "join_group")
        request = JoinGroupRequest(
            version=version, group_id=group_id, session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=rebalance_timeout_ms, member_id=member_id, group_instance_id=group_instance_id,
            protocol_type=PROTOCOL_TYPE,
            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name=n, metadata=m) for n, m in protocols],
            reason=reason)
        response = self.connection.send(request, timeout_ms=rebalance_timeout_ms + JOIN_TIMEOUT_MARGIN_MS)
        return JoinGroupResponse(
            error=error_for_code(response.error_code), generation_id=response.generation_id,
            protocol_type=getattr(response, "protocol_type", None) if version >= 7 else None,
            member_id=response.member_id, leader=response.leader, protocol_name=response.protocol_name,
            skip_assignment=bool(getattr(response, "skip_assignment", False)) if version >= 9 else False,
            members=tuple(JoinGroupMember(m.member_id, m.group_instance_id if version >= 5 else None,
                                          bytes(m.metadata)) for m in response.members))

    def sync_group(self, *, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None,
                   protocol_name: str | None, assignments: Mapping[str, bytes], timeout_ms: int) -> SyncGroupResponse:
        """Send this member's SyncGroup (with everyone's assignment when it is the assigning leader)."""
        version = self._version(SyncGroupRequest, "sync_group")
        request = SyncGroupRequest(
            version=version, group_id=group_id, generation_id=generation_id, member_id=member_id,
            group_instance_id=group_instance_id, protocol_type=PROTOCOL_TYPE, protocol_name=protocol_name,
            assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=a)
                         for m, a in assignments.items()])
        response = self.connection.send(request, timeout_ms=timeout_ms)
        return SyncGroupResponse(error=error_for_code(response.error_code), assignment=bytes(response.assignment))

    def heartbeat(self, *, group_id: str, generation_id: int, member_id: str,
                  group_instance_id: str | None) -> ErrorCode:
        """One heartbeat."""
        version = self._version(HeartbeatRequest, "heartbeat")
        response = self.connection.send(HeartbeatRequest(
            version=version, group_id=group_id, generation_id=generation_id, member_id=member_id,
            group_instance_id=group_instance_id))
        return error_for_code(response.error_code)

    def leave_group(self, *, group_id: str, member_id: str, group_instance_id: str | None,
                    reason: str | None = None) -> ErrorCode:
        """Leave the group (v3+ names the member, with its instance id for a static member)."""
        version = self._version(LeaveGroupRequest, "leave_group")
        identity = LeaveGroupRequest.MemberIdentity(member_id=member_id, group_instance_id=group_instance_id,
                                                    reason=reason)
        response = self.connection.send(LeaveGroupRequest(version=version, group_id=group_id, member_id=member_id,
                                                          members=[identity]))
        error = error_for_code(response.error_code)
        if error is Errors.NONE and version >= 3:
            for member in response.members:
                if member.error_code:
                    return error_for_code(member.error_code)
        return error

    def offset_commit(self, *, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None,
                      offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> dict[TopicPartition, ErrorCode]:
        """Commit ``offsets``; the error of every partition."""
        version = self._version(OffsetCommitRequest, "offset_commit")
        by_topic: dict[str, list[OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition]] = {}
        for tp, committed in sorted(offsets.items()):
            by_topic.setdefault(tp.topic, []).append(
                OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                    partition_index=tp.partition, committed_offset=committed.offset,
                    committed_leader_epoch=committed.leader_epoch if committed.leader_epoch is not None else -1,
                    commit_timestamp=-1, committed_metadata=committed.metadata))
        request = OffsetCommitRequest(
            version=version, group_id=group_id, generation_id_or_member_epoch=generation_id, member_id=member_id,
            group_instance_id=group_instance_id, retention_time_ms=-1,
            topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name=t, partitions=p) for t, p in by_topic.items()])
        response = self.connection.send(request)
        return {TopicPartition(topic.name, p.partition_index): error_for_code(p.error_code)
                for topic in response.topics for p in topic.partitions}

    def offset_fetch(self, *, group_id: str, partitions: Sequence[TopicPartition]) -> OffsetFetchResponse:
        """The committed offsets of ``partitions`` (the group error, or else the first partition error, on top)."""
        version = self._version(OffsetFetchRequest, "offset_fetch")
        by_topic: dict[str, list[int]] = {}
        for tp in sorted(set(partitions)):
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        request = OffsetFetchRequest(
            version=version, group_id=group_id, require_stable=False,
            topics=[OffsetFetchRequest.OffsetFetchRequestTopic(name=t, partition_indexes=p)
                    for t, p in by_topic.items()])
        response = self.connection.send(request)
        error = error_for_code(response.error_code) if version >= 2 else Errors.NONE
        topics = []
        for topic in response.topics:
            fetched = []
            for p in topic.partitions:
                if p.error_code and error is Errors.NONE:
                    error = error_for_code(p.error_code)
                fetched.append(OffsetFetchPartition(p.partition_index, p.committed_offset,
                                                    p.committed_leader_epoch if version >= 5 else -1,
                                                    p.metadata or "", error_for_code(p.error_code)))
            topics.append(OffsetFetchTopicResponse(topic.name, tuple(fetched)))
        return OffsetFetchResponse(error=error, topics=tuple(topics))

    def topic_partition_counts(self) -> dict[str, int]:
        """Every topic the broker knows, with its partition count (Metadata for all topics)."""
        version = self._version(MetadataRequest, "metadata")
        response = self.connection.send(MetadataRequest(version=version, topics=None,
                                                        allow_auto_topic_creation=False))
        return {t.name: len(t.partitions) for t in response.topics if t.error_code == 0}

    def call(self, request: rq.GroupRequest, *, timeout_ms: int) -> GroupResponse:
        """Send a member's request (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit); its response.

        ``timeout_ms`` bounds a SyncGroup, which the coordinator may park until the group's rebalance completes.
        """
        if isinstance(request, rq.JoinGroupRequest):
            return self.join_group(
                group_id=request.group_id, member_id=request.member_id, group_instance_id=request.group_instance_id,
                session_timeout_ms=request.session_timeout_ms, rebalance_timeout_ms=request.rebalance_timeout_ms,
                protocols=[(p.name, p.metadata) for p in request.protocols], reason=request.reason)
        if isinstance(request, rq.SyncGroupRequest):
            return self.sync_group(
                group_id=request.group_id, generation_id=request.generation_id, member_id=request.member_id,
                group_instance_id=request.group_instance_id, protocol_name=request.protocol_name,
                assignments={a.member_id: a.assignment for a in request.assignments}, timeout_ms=timeout_ms)
        if isinstance(request, rq.HeartbeatRequest):
            return HeartbeatResponse(error=self.heartbeat(
                group_id=request.group_id, generation_id=request.generation_id, member_id=request.member_id,
                group_instance_id=request.group_instance_id))
        if isinstance(request, rq.LeaveGroupRequest):
            (member,) = request.members
            return LeaveGroupResponse(error=self.leave_group(
                group_id=request.group_id, member_id=member.member_id, group_instance_id=member.group_instance_id,
                reason=member.reason))
        if isinstance(request, rq.OffsetCommitRequest):
            errors = self.offset_commit(
                group_id=request.group_id, generation_id=request.generation_id, member_id=request.member_id,
                group_instance_id=request.group_instance_id,
                offsets={TopicPartition(t.name, p.partition): OffsetAndMetadata(p.offset, p.metadata, p.leader_epoch)
                         for t in request.topics for p in t.partitions})
            by_topic: dict[str, list[PartitionError]] = {}
            for tp, error in sorted(errors.items()):
                by_topic.setdefault(tp.topic, []).append(PartitionError(tp.partition, error))
            return OffsetCommitResponse(topics=tuple(TopicPartitionErrors(t, tuple(ps)) for t, ps in by_topic.items()))
        raise TypeError(f"a member does not send {type(request).__name__}")
