"""Group requests at exact API versions over a raw socket, every answer recorded in an :class:`Observation`.

kafka-python's schema classes encode each request at the version asked for (fields a version lacks are left out) and
decode the answer; :class:`~tests.server.conftest.RawClient` carries the frames. A :class:`RawMember` plays one
classic consumer that speaks one client generation's versions (:func:`versions_for`), so a scenario reads as the
steps of a real client; :class:`Wire` sends the requests that need no membership.
"""

from __future__ import annotations

import struct
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kafka.protocol.admin import DeleteGroupsRequest, DescribeGroupsRequest, ListGroupsRequest
from kafka.protocol.consumer import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

from groupcoord.protocol.schemas import decode_response as decode_schema_response
from groupcoord.protocol.schemas import encode_request as encode_schema_request
from tests.parity.observe import Observation
from tests.parity.targets import TOPIC, Target
from tests.server.conftest import RawClient, decode_response

MEMBER_ID_REQUIRED = 79
SESSION_TIMEOUT_MS = 10000
REBALANCE_TIMEOUT_MS = 10000


@dataclass(frozen=True)
class Versions:
    """The versions one client generation sends together (Kafka's Java client pairs them this way)."""

    join: int
    sync: int
    heartbeat: int
    leave: int
    commit: int
    fetch: int
    describe: int


_CLIENT_GENERATIONS = {
    0: Versions(join=0, sync=0, heartbeat=0, leave=0, commit=2, fetch=1, describe=0),
    1: Versions(join=1, sync=1, heartbeat=1, leave=1, commit=3, fetch=2, describe=1),
    2: Versions(join=2, sync=1, heartbeat=1, leave=1, commit=3, fetch=2, describe=1),
    3: Versions(join=3, sync=2, heartbeat=2, leave=2, commit=4, fetch=3, describe=2),
    4: Versions(join=4, sync=2, heartbeat=2, leave=2, commit=5, fetch=5, describe=2),
    5: Versions(join=5, sync=3, heartbeat=3, leave=3, commit=7, fetch=6, describe=4),
    6: Versions(join=6, sync=4, heartbeat=4, leave=4, commit=8, fetch=7, describe=5),
    7: Versions(join=7, sync=5, heartbeat=4, leave=4, commit=8, fetch=7, describe=5),
    8: Versions(join=8, sync=5, heartbeat=4, leave=5, commit=8, fetch=8, describe=5),
    9: Versions(join=9, sync=5, heartbeat=4, leave=5, commit=9, fetch=9, describe=5),
}
OLD_JOIN_VERSIONS = (0, 1, 2, 3)
"""JoinGroup versions before KIP-394: a new member joins at once, without MEMBER_ID_REQUIRED."""
JOIN_VERSIONS = tuple(v for v in _CLIENT_GENERATIONS if v not in OLD_JOIN_VERSIONS)
"""JoinGroup versions with KIP-394's member id round trip, which the multi-member scenarios rely on."""
STATIC_JOIN_VERSIONS = tuple(v for v in JOIN_VERSIONS if v >= 5)
"""JoinGroup versions that carry ``group.instance.id`` (static membership, KIP-345)."""


def versions_for(join_version: int) -> Versions:
    """The versions a client that joins with JoinGroup ``join_version`` uses for its other group requests."""
    return _CLIENT_GENERATIONS[join_version]


def subscription(*topics: str, owned: Mapping[str, Iterable[int]] | None = None) -> bytes:
    """A consumer protocol subscription to ``topics``: version 0, or version 1 reporting the partitions the member
    ``owned`` (as a cooperative client sends it)."""
    if owned is None:
        return bytes(ConsumerProtocolSubscription(version=0, topics=list(topics), user_data=b"").encode())
    reported = [ConsumerProtocolSubscription.TopicPartition(topic=topic, partitions=sorted(partitions))
                for topic, partitions in owned.items()]
    return bytes(ConsumerProtocolSubscription(version=1, topics=list(topics), user_data=b"",
                                              owned_partitions=reported).encode())


def assignment(partitions: Mapping[str, Iterable[int]]) -> bytes:
    """A consumer protocol assignment (version 0) of ``partitions`` by topic."""
    owned = [ConsumerProtocolAssignment.TopicPartition(topic=topic, partitions=list(numbers))
             for topic, numbers in partitions.items()]
    return bytes(ConsumerProtocolAssignment(version=0, assigned_partitions=owned, user_data=b"").encode())


def commit_partition(partition: int, offset: int, metadata: str | None = "") -> Any:
    """One partition of an OffsetCommit request."""
    return OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
        partition_index=partition, committed_offset=offset, committed_leader_epoch=-1, commit_timestamp=-1,
        committed_metadata=metadata)


def offset_commit(group: str, version: int, offsets: Mapping[str, list[Any]], *, generation: int = -1,
                  member_id: str = "", instance_id: str | None = None) -> Any:
    """An OffsetCommit request of ``offsets`` (topic -> :func:`commit_partition` items)."""
    topics = [OffsetCommitRequest.OffsetCommitRequestTopic(name=name, partitions=partitions)
              for name, partitions in offsets.items()]
    return OffsetCommitRequest(version=version, group_id=group, generation_id_or_member_epoch=generation,
                               member_id=member_id, group_instance_id=instance_id, retention_time_ms=-1,
                               topics=topics)


def offset_fetch(group: str, version: int, topics: Mapping[str, list[int]] | None) -> Any:
    """An OffsetFetch request (``topics=None`` asks for every committed offset, from v2)."""
    if version >= 8:
        wanted = None if topics is None else [
            OffsetFetchRequest.OffsetFetchRequestGroup.OffsetFetchRequestTopics(name=name, partition_indexes=parts)
            for name, parts in topics.items()]
        return OffsetFetchRequest(version=version, require_stable=False, groups=[
            OffsetFetchRequest.OffsetFetchRequestGroup(group_id=group, member_id=None, member_epoch=-1,
                                                       topics=wanted)])
    listed = None if topics is None else [OffsetFetchRequest.OffsetFetchRequestTopic(name=name, partition_indexes=parts)
                                          for name, parts in topics.items()]
    return OffsetFetchRequest(version=version, group_id=group, topics=listed, require_stable=False)


class Wire:
    """A raw connection to one target; every answer goes into ``observation`` under the caller's label."""

    def __init__(self, target: Target, observation: Observation) -> None:
        self.target = target
        self.observation = observation
        self.client = RawClient(target.address)

    def call(self, label: str, request: Any) -> Any:
        """Send ``request``, record its answer under ``label`` and return it."""
        response = self.client.request(request)
        self.observation.add(label, response)
        return response

    def send(self, request: Any) -> Any:
        """Send ``request`` without waiting (for requests the coordinator holds, such as a JoinGroup)."""
        self.client.send_raw(self.client.encode(request))
        return request

    def receive(self, label: str, request: Any) -> Any:
        """Read, record and return the answer to ``request`` (sent with :meth:`send`)."""
        payload = self.client.read_frame()
        assert payload is not None, f"{self.target.name} closed the connection"
        response = decode_response(request, payload)
        self.observation.add(label, response)
        return response

    def describe(self, label: str, group: str, version: int = 5) -> Any:
        """DescribeGroups of ``group``."""
        return self.call(label, DescribeGroupsRequest(version=version, groups=[group],
                                                      include_authorized_operations=False))

    def wait_for_state(self, group: str, state: str, timeout_s: float = 15.0) -> None:
        """Poll DescribeGroups (unrecorded) until ``group`` is in ``state``: another connection's request was seen."""
        deadline = time.monotonic() + timeout_s
        request = DescribeGroupsRequest(version=0, groups=[group])
        while self.client.request(request).groups[0].group_state != state:
            assert time.monotonic() < deadline, f"{group} not {state} on {self.target.name} after {timeout_s} s"
            time.sleep(0.02)

    def list_groups(self, label: str, groups: Iterable[str], version: int = 4,
                    states: Iterable[str] = ()) -> list[Any]:
        """ListGroups, keeping only ``groups`` (both sides hold other tests' groups too); records the rows."""
        response = self.client.request(ListGroupsRequest(version=version, states_filter=list(states),
                                                         types_filter=[]))
        wanted = set(groups)
        rows = sorted((g.to_dict() for g in response.groups if g.group_id in wanted), key=lambda g: g["group_id"])
        self.observation.add(label, {"error_code": response.error_code, "groups": rows})
        return rows

    def delete_groups(self, label: str, groups: list[str], version: int = 2) -> Any:
        """DeleteGroups."""
        return self.call(label, DeleteGroupsRequest(version=version, groups_names=groups))

    def offset_delete(self, label: str, group: str, partitions: Mapping[str, list[int]]) -> Any:
        """OffsetDelete (v0) of ``partitions`` by topic."""
        topics = [OffsetDeleteRequest.OffsetDeleteRequestTopic(
            name=name, partitions=[OffsetDeleteRequest.OffsetDeleteRequestTopic.OffsetDeleteRequestPartition(
                partition_index=p) for p in parts]) for name, parts in partitions.items()]
        return self.call(label, OffsetDeleteRequest(version=0, group_id=group, topics=topics))

    def commit(self, label: str, request: Any) -> Any:
        """OffsetCommit (built with :func:`offset_commit`)."""
        return self.call(label, request)

    def fetch(self, label: str, group: str, version: int, topics: Mapping[str, list[int]] | None) -> Any:
        """OffsetFetch of ``topics`` (None: all)."""
        return self.call(label, offset_fetch(group, version, topics))

    def schema_request(self, api_key: int, version: int, body: Mapping[str, Any]) -> dict[str, Any]:
        """Send ``body`` encoded with Kafka's own message schemas (for versions past kafka-python's) and return the
        decoded answer, unrecorded."""
        self.client._correlation_id += 1
        payload = encode_schema_request(api_key, version, self.client._correlation_id, "parity", body)
        self.client.send_raw(struct.pack(">i", len(payload)) + payload)
        frame = self.client.read_frame()
        assert frame is not None, f"{self.target.name} closed the connection"
        return decode_schema_response(api_key, version, frame)[1]

    def topic_ids(self) -> dict[uuid.UUID, str]:
        """The target's topic ids (Metadata v12), by id: each side gives its topics ids of its own."""
        response = self.schema_request(3, 12, {"Topics": None, "AllowAutoTopicCreation": False,
                                               "IncludeTopicAuthorizedOperations": False})
        return {topic["TopicId"]: topic["Name"] for topic in response["Topics"]}

    def schema_call(self, label: str, api_key: int, version: int, body: Mapping[str, Any],
                    ids: Mapping[uuid.UUID, str], *, hash_ordered: bool = False) -> dict[str, Any]:
        """:meth:`schema_request`, recorded under ``label`` with each topic id replaced by its name in ``ids``
        (``<unknown id>`` for another), so that both sides' answers compare; ``hash_ordered`` answers (Kafka lists
        every committed offset in hash order) are recorded with their lists sorted."""
        response = self.schema_request(api_key, version, body)
        named = _named_ids(response, ids)
        self.observation.add(label, _sorted_lists(named) if hash_ordered else named)
        return response

    def close(self) -> None:
        """Close the connection."""
        self.client.close()


def _named_ids(value: Any, ids: Mapping[uuid.UUID, str]) -> Any:
    if isinstance(value, uuid.UUID):
        return f"<id of {ids[value]}>" if value in ids else "<unknown id>"
    if isinstance(value, dict):
        return {key: _named_ids(item, ids) for key, item in value.items()}
    if isinstance(value, list):
        return [_named_ids(item, ids) for item in value]
    return value


def _sorted_lists(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _sorted_lists(item) for key, item in value.items()}
    if isinstance(value, list):
        return sorted((_sorted_lists(item) for item in value), key=repr)
    return value


class RawMember(Wire):
    """One classic consumer group member speaking the versions of one client generation.

    It keeps the member id and generation the coordinator gave it, so each method sends what a real client would;
    keyword overrides send something else on purpose (a stale generation, another member id).
    """

    def __init__(self, target: Target, observation: Observation, group: str, versions: Versions, name: str, *,
                 instance_id: str | None = None, session_timeout_ms: int = SESSION_TIMEOUT_MS,
                 topics: tuple[str, ...] = (TOPIC,)) -> None:
        super().__init__(target, observation)
        self.name = name
        self.group = group
        self.versions = versions
        self.instance_id = instance_id
        self.session_timeout_ms = session_timeout_ms
        self.topics = topics
        self.member_id = ""
        self.generation = -1
        self.protocol = "range"
        self.leader = ""
        self.owned: dict[str, list[int]] | None = None
        """Partitions the member reports owning in its subscription (version 1), or ``None`` (version 0)."""

    def join_request(self, *, member_id: str | None = None, protocol_type: str = "consumer") -> Any:
        """This member's JoinGroup (its current member id unless ``member_id`` is given)."""
        metadata = subscription(*self.topics, owned=self.owned)
        protocols = [JoinGroupRequest.JoinGroupRequestProtocol(name=self.protocol, metadata=metadata)]
        return JoinGroupRequest(version=self.versions.join, group_id=self.group,
                                session_timeout_ms=self.session_timeout_ms, rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
                                member_id=self.member_id if member_id is None else member_id,
                                group_instance_id=self.instance_id, protocol_type=protocol_type, protocols=protocols,
                                reason=None)

    def start_join(self, **overrides: Any) -> Any:
        """Send a JoinGroup without waiting: the coordinator answers once the rebalance completes."""
        return self.send(self.join_request(**overrides))

    def finish_join(self, label: str, request: Any) -> Any:
        """The answer to :meth:`start_join`; adopts the member id and generation it carries."""
        response = self.receive(label, request)
        if response.error_code in (0, MEMBER_ID_REQUIRED) and response.member_id:
            self.member_id = response.member_id
        if response.error_code == 0:
            self.generation = response.generation_id
            self.leader = response.leader
        return response

    def join(self, label: str, **overrides: Any) -> Any:
        """One JoinGroup round trip (see :meth:`finish_join`)."""
        return self.finish_join(label, self.start_join(**overrides))

    def join_group(self, label: str) -> Any:
        """Join as a client does: a dynamic member's first join gets MEMBER_ID_REQUIRED, then joins with that id."""
        response = self.join(label)
        if response.error_code == MEMBER_ID_REQUIRED:
            response = self.join(f"{label} (with member id)")
        return response

    def sync(self, label: str, assignments: Mapping[str, bytes] | None = None, *,
             generation: int | None = None) -> Any:
        """SyncGroup; a leader passes ``assignments`` by member id."""
        entries = [SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=a)
                   for m, a in (assignments or {}).items()]
        return self.call(label, self._sync_request(entries, generation))

    def start_sync(self, assignments: Mapping[str, bytes] | None = None) -> Any:
        """Send a SyncGroup without waiting (a follower's waits for the leader's)."""
        entries = [SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=a)
                   for m, a in (assignments or {}).items()]
        return self.send(self._sync_request(entries, None))

    def heartbeat_request(self, *, generation: int | None = None, member_id: str | None = None) -> Any:
        """This member's Heartbeat (its generation and id unless overridden)."""
        return HeartbeatRequest(version=self.versions.heartbeat, group_id=self.group,
                                generation_id=self.generation if generation is None else generation,
                                member_id=self.member_id if member_id is None else member_id,
                                group_instance_id=self.instance_id)

    def heartbeat(self, label: str, *, generation: int | None = None, member_id: str | None = None) -> Any:
        """Heartbeat, recorded (see :meth:`heartbeat_request`)."""
        return self.call(label, self.heartbeat_request(generation=generation, member_id=member_id))

    def leave(self, label: str) -> Any:
        """LeaveGroup of this member (by member id, and instance id from v3)."""
        identity = LeaveGroupRequest.MemberIdentity(member_id=self.member_id, group_instance_id=self.instance_id,
                                                    reason=None)
        return self.call(label, LeaveGroupRequest(version=self.versions.leave, group_id=self.group,
                                                  member_id=self.member_id, members=[identity]))

    def commit_offsets(self, label: str, offsets: Mapping[str, list[Any]], *, generation: int | None = None,
                       member_id: str | None = None) -> Any:
        """OffsetCommit as this member (its generation and member id unless overridden)."""
        return self.call(label, offset_commit(
            self.group, self.versions.commit, offsets, generation=self.generation if generation is None else generation,
            member_id=self.member_id if member_id is None else member_id, instance_id=self.instance_id))

    def _sync_request(self, entries: list[Any], generation: int | None) -> Any:
        return SyncGroupRequest(version=self.versions.sync, group_id=self.group,
                                generation_id=self.generation if generation is None else generation,
                                member_id=self.member_id, group_instance_id=self.instance_id,
                                protocol_type="consumer", protocol_name=self.protocol, assignments=entries)


def rebalance(label: str, members: list[RawMember], partitions: int = 3) -> None:
    """Every member (re)joins at once, then syncs; the leader gives ``TOPIC``'s partitions round robin in list order.

    A new dynamic member first asks for its member id. At most one member may be new to the group: Kafka processes
    two connections' joins in either order, and the first to join leads (use :func:`add_member` one at a time).
    """
    for member in members:
        if not member.member_id and member.instance_id is None:
            member.join(f"{label}: {member.name} asks for a member id")
    pending = [(member, member.start_join()) for member in members]
    for member, request in pending:
        member.finish_join(f"{label}: {member.name} joins", request)
    sync_all(label, members, partitions)


def add_member(label: str, members: list[RawMember], newcomer: RawMember) -> None:
    """``newcomer`` joins a stable group of ``members``; once the group prepares a rebalance they rejoin, then all sync.

    Waiting for PreparingRebalance makes the order deterministic: the members already in the group keep the lead.
    """
    if not newcomer.member_id and newcomer.instance_id is None:
        newcomer.join(f"{label}: {newcomer.name} asks for a member id")
    newcomer_joins = newcomer.start_join()
    # Asked on another connection: a connection's requests are answered in order, after the held JoinGroup.
    members[0].wait_for_state(newcomer.group, "PreparingRebalance")
    rejoins = [(member, member.start_join()) for member in members]
    for member, request in rejoins:
        member.finish_join(f"{label}: {member.name} rejoins", request)
    newcomer.finish_join(f"{label}: {newcomer.name} joins", newcomer_joins)
    sync_all(label, [*members, newcomer])


def sync_all(label: str, members: list[RawMember], partitions: int = 3) -> None:
    """Every member of a completed join syncs; the leader gives ``TOPIC``'s partitions round robin in list order."""
    leader = next(member for member in members if member.member_id == member.leader)
    plan = {member.member_id: assignment({TOPIC: range(i, partitions, len(members))})
            for i, member in enumerate(members)}
    followers = [(member, member.start_sync()) for member in members if member is not leader]
    leader.sync(f"{label}: {leader.name} (leader) syncs", plan)
    for member, request in followers:
        member.receive(f"{label}: {member.name} syncs", request)
