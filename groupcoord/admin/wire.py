"""The admin writes on the Kafka wire: DescribeGroups (the live state), simple OffsetCommit, DeleteGroups,
OffsetDelete, AlterUserScramCredentials (``groupcoord users``). Requests are kafka-python protocol classes (Kafka's
schemas for AlterUserScramCredentials) at the version both sides speak; answers carry groupcoord's
:class:`~groupcoord.protocol.errors.ErrorCode`.

Offsets are committed the way Kafka's ``kafka-consumer-groups.sh --reset-offsets`` does: a *simple* commit
(generation -1, no member id), which the coordinator accepts only while the group has no members.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType

from kafka.protocol.admin import DeleteGroupsRequest, DescribeGroupsRequest
from kafka.protocol.consumer import OffsetDeleteRequest
from kafka.structs import OffsetAndMetadata, TopicPartition

from groupcoord.member.connection import BrokerConnection
from groupcoord.member.wire import GroupClient
from groupcoord.protocol.errors import ErrorCode, Errors, error_for_code
from groupcoord.security.acl_wire import binding_of, creation_fields, filter_fields
from groupcoord.security.acls import AclBinding, AclFilter
from groupcoord.security.config import ClientSecurity
from groupcoord.security.credentials import PLAIN_WIRE_TYPE, SaltedPassword
from groupcoord.security.scram import ScramMechanism

CLIENT_ID = "groupcoord-admin"
ALTER_USER_SCRAM_CREDENTIALS = 51
CREATE_ACLS = 30
DELETE_ACLS = 31
ACL_VERSION = 3
_NO_GENERATION = -1


@dataclass(frozen=True)
class LiveGroupState:
    """A group as the coordinator describes it right now."""

    error: ErrorCode
    state: str
    members: int


@dataclass(frozen=True)
class OffsetDeleteResult:
    """An OffsetDelete answer: the group-level error and each partition's."""

    error: ErrorCode
    partitions: Mapping[int, ErrorCode]


class AdminClient:
    """A blocking admin connection to the coordinator at ``HOST:PORT``; use it as a context manager."""

    def __init__(self, address: str, *, timeout_ms: int, security: ClientSecurity | None = None) -> None:
        host, _, port = address.rpartition(":")
        self._connection = BrokerConnection(host.strip("[]"), int(port), client_id=CLIENT_ID, timeout_ms=timeout_ms,
                                            security=security)
        self._connection.connect()
        self._groups = GroupClient(self._connection)

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection."""
        self._connection.close()

    def describe_group(self, group_id: str) -> LiveGroupState:
        """The group's live state (``Empty``, ``Stable``, ``PreparingRebalance``, ``Dead`` for none, ...)."""
        version = self._connection.version_for(DescribeGroupsRequest, 5)
        request = DescribeGroupsRequest(version=version, groups=[group_id], include_authorized_operations=False)
        (group,) = self._connection.send(request).groups
        return LiveGroupState(error_for_code(group.error_code), group.group_state, len(group.members))

    def commit_offsets(self, group_id: str, offsets: Mapping[tuple[str, int], int], *,
                       metadata: str = "") -> dict[tuple[str, int], ErrorCode]:
        """A simple commit of ``offsets`` with ``metadata``; the error of every partition."""
        errors = self._groups.offset_commit(
            group_id=group_id, generation_id=_NO_GENERATION, member_id="", group_instance_id=None,
            offsets={TopicPartition(t, p): OffsetAndMetadata(o, metadata, -1) for (t, p), o in offsets.items()})
        return {(tp.topic, tp.partition): error for tp, error in errors.items()}

    def delete_group(self, group_id: str) -> ErrorCode:
        """Delete ``group_id`` with its offsets (refused with NON_EMPTY_GROUP while it has members)."""
        version = self._connection.version_for(DeleteGroupsRequest, 2)
        response = self._connection.send(DeleteGroupsRequest(version=version, groups_names=[group_id]))
        results = [r for r in response.results if r.group_id == group_id]
        return error_for_code(results[0].error_code) if results else Errors.UNKNOWN_SERVER_ERROR

    def delete_offsets(self, group_id: str, topic: str, partitions: Sequence[int]) -> OffsetDeleteResult:
        """Delete the committed offsets of ``partitions`` of ``topic`` (refused for a subscribed topic)."""
        request = OffsetDeleteRequest(
            version=0, group_id=group_id,
            topics=[OffsetDeleteRequest.OffsetDeleteRequestTopic(
                name=topic,
                partitions=[OffsetDeleteRequest.OffsetDeleteRequestTopic.OffsetDeleteRequestPartition(partition_index=p)
                            for p in sorted(partitions)])])
        response = self._connection.send(request)
        errors = {p.partition_index: error_for_code(p.error_code) for t in response.topics for p in t.partitions}
        return OffsetDeleteResult(error_for_code(response.error_code), errors)

    def alter_credentials(self, user: str, mechanism: str, salted: SaltedPassword | None) -> tuple[ErrorCode, str]:
        """Set (or with ``None`` delete) ``user``'s credential for ``mechanism`` with AlterUserScramCredentials:
        the error and Kafka's message. PLAIN travels as mechanism :data:`PLAIN_WIRE_TYPE` (a groupcoord
        extension)."""
        wire_type = PLAIN_WIRE_TYPE if mechanism == "PLAIN" else ScramMechanism.named(mechanism).wire_type
        body: dict[str, list[dict[str, object]]] = {"Deletions": [], "Upsertions": []}
        if salted is None:
            body["Deletions"].append({"Name": user, "Mechanism": wire_type})
        else:
            body["Upsertions"].append({"Name": user, "Mechanism": wire_type, "Iterations": salted.iterations,
                                       "Salt": salted.salt, "SaltedPassword": salted.salted})
        answer = self._connection.send_schema(ALTER_USER_SCRAM_CREDENTIALS, 0, body)
        (result,) = answer["Results"]
        return error_for_code(result["ErrorCode"]), result["ErrorMessage"] or ""

    def create_acls(self, bindings: Sequence[AclBinding]) -> list[tuple[ErrorCode, str]]:
        """Create ``bindings`` with CreateAcls: the error and Kafka's message of each, in order."""
        answer = self._connection.send_schema(CREATE_ACLS, ACL_VERSION,
                                              {"Creations": [creation_fields(b) for b in bindings]})
        return [(error_for_code(r["ErrorCode"]), r["ErrorMessage"] or "") for r in answer["Results"]]

    def delete_acls(self, filters: Sequence[AclFilter]) -> list[tuple[ErrorCode, str, list[AclBinding]]]:
        """Delete what ``filters`` match with DeleteAcls: the error, Kafka's message and the deleted bindings of each
        filter, in order."""
        answer = self._connection.send_schema(DELETE_ACLS, ACL_VERSION,
                                              {"Filters": [filter_fields(f) for f in filters]})
        return [(error_for_code(r["ErrorCode"]), r["ErrorMessage"] or "",
                 [binding_of(acl) for acl in r["MatchingAcls"]]) for r in answer["FilterResults"]]
