"""Each API allowed and denied by ACLs over a real socket: a SASL_PLAINTEXT endpoint in front of the full stack
(``serve``'s APIs), a raw client speaking Kafka's schemas as ``alice``; the ACL that allows each API is created and
then revoked, and the next request on the same connection is denied again."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pytest

from groupcoord.admin.users import add_user
from groupcoord.assignment.runner import driver_assignment_runner
from groupcoord.config import resolve_config
from groupcoord.host.background import BackgroundCoordinator
from groupcoord.protocol.requests import AlterAclsRequest, AlterCredentialsRequest, CredentialChange
from groupcoord.security.acl_wire import creation_fields, filter_fields
from groupcoord.security.acls import AclBinding, AclFilter, Operation, PatternType, Permission, ResourceType
from groupcoord.security.authorizer import AuthorizerConfig
from groupcoord.security.config import ListenerSecurity
from groupcoord.security.plain import new_plain_credential
from groupcoord.server.api import BrokerAddress
from groupcoord.server.versions import ApiKey
from groupcoord.state_root import StateRoot
from groupcoord.topics import TopicCatalog
from tests.security.conftest import SaslRawClient, plain_token
from tests.server.conftest import CoordinatorStack, coordinator_stack, start_endpoint

__all__ = ["coordinator_stack", "start_endpoint"]  # fixtures used here

ALICE, ADMIN = "User:alice", "User:admin"
PASSWORDS = {"alice": "alice-pw", "admin": "admin-pw"}
TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
TRANSACTION = ResourceType.TRANSACTIONAL_ID
NO_ID = uuid.UUID(int=0)
DENIED_TOPIC, DENIED_GROUP, DENIED_CLUSTER, DENIED_TRANSACTION = 29, 30, 31, 53
DENIALS = (DENIED_TOPIC, DENIED_GROUP, DENIED_CLUSTER, DENIED_TRANSACTION)


def allow(kind: ResourceType, name: str, operation: Operation, principal: str = ALICE,
          pattern: PatternType = PatternType.LITERAL) -> AclBinding:
    """An ALLOW binding from any host."""
    return AclBinding(kind, name, pattern, principal, "*", operation, Permission.ALLOW)


def at(body: Any, path: str) -> Any:
    """The value at a dotted ``path`` (list indexes as numbers) of a decoded response; of ``A|B``, the first
    present error code that is not 0 (else 0)."""
    if "|" in path:
        found = []
        for alternative in path.split("|"):
            with contextlib.suppress(IndexError, KeyError):
                found.append(at(body, alternative))
        if not found:
            raise KeyError(path)
        return next((code for code in found if code), 0)
    for part in path.split("."):
        body = body[int(part)] if part.isdigit() else body[part]
    return body


@dataclass
class Secured:
    """The stack with the authorizer on, and clients authenticated as users."""

    stack: CoordinatorStack
    clients: list[SaslRawClient] = field(default_factory=list)

    def submit(self, request: Any) -> Any:
        """Submit a core request (as the state root's owner does)."""
        return self.stack.running.call(self.stack.service.submit(request))

    def grant(self, *bindings: AclBinding) -> None:
        """Create ``bindings``."""
        self.submit(AlterAclsRequest(creations=bindings))

    def revoke_all(self) -> None:
        """Delete every ACL."""
        self.submit(AlterAclsRequest(deletions=(AclFilter(),)))

    def client(self, user: str = "alice") -> SaslRawClient:
        """A connection authenticated as ``user`` with PLAIN."""
        client = SaslRawClient(self.stack.running.address)
        self.clients.append(client)
        assert client.call(ApiKey.SASL_HANDSHAKE, 1, {"Mechanism": "PLAIN"})["ErrorCode"] == 0  # type: ignore[index]
        answer = client.call(ApiKey.SASL_AUTHENTICATE, 2, {"AuthBytes": plain_token(user, PASSWORDS[user])})
        assert answer is not None and answer["ErrorCode"] == 0
        return client


@pytest.fixture
def secured(coordinator_stack: Callable[..., CoordinatorStack]) -> Iterator[Secured]:
    """Topic ``orders`` (2 partitions), users alice and admin (a super user), the authorizer on, no ACL."""
    listener = ListenerSecurity(protocol="SASL_PLAINTEXT", mechanisms=("PLAIN",))
    authorizer = AuthorizerConfig(enabled=True, super_users=frozenset({ADMIN}))
    stack = coordinator_stack({"orders": 2}, endpoint_config={"security": listener, "authorizer": authorizer})
    secured = Secured(stack)
    secured.submit(AlterCredentialsRequest(tuple(CredentialChange(user, "PLAIN", new_plain_credential(password))
                                                 for user, password in PASSWORDS.items())))
    yield secured
    for client in secured.clients:
        client.close()


@dataclass(frozen=True)
class Case:
    """One API: its request, where its error is, the code when denied, and the ACLs that allow it, step by step
    (each step passes the previous one's check and meets the next denial, as Kafka checks the group before the
    topics)."""

    name: str
    api: ApiKey
    version: int
    body: dict[str, Any]
    error_at: str
    steps: Sequence[tuple[int, Sequence[AclBinding]]]


_COMMIT: dict[str, Any] = {"GroupId": "g", "GenerationIdOrMemberEpoch": -1, "MemberId": "", "Topics": [
    {"Name": "orders", "Partitions": [{"PartitionIndex": 0, "CommittedOffset": 5, "CommittedMetadata": ""}]}]}
_FILTER = {"ResourceTypeFilter": 1, "ResourceNameFilter": None, "PatternTypeFilter": 1, "PrincipalFilter": None,
           "HostFilter": None, "Operation": 1, "PermissionType": 1}
_CREATION = {"ResourceType": 2, "ResourceName": "x", "ResourcePatternType": 3, "Principal": "User:bob", "Host": "*",
             "Operation": 3, "PermissionType": 3}

CASES = [
    Case("Metadata", ApiKey.METADATA, 12, {"Topics": [{"Name": "orders", "TopicId": NO_ID}]}, "Topics.0.ErrorCode",
         [(DENIED_TOPIC, [allow(TOPIC, "orders", Operation.DESCRIBE)])]),
    Case("ListOffsets", ApiKey.LIST_OFFSETS, 7, {"ReplicaId": -1, "Topics": [
        {"Name": "orders", "Partitions": [{"PartitionIndex": 0, "Timestamp": -1}]}]},
        "Topics.0.Partitions.0.ErrorCode", [(DENIED_TOPIC, [allow(TOPIC, "ord", Operation.READ, pattern=PatternType.
                                                                   PREFIXED)])]),
    Case("Fetch", ApiKey.FETCH, 12, {"ReplicaId": -1, "MaxWaitMs": 0, "MinBytes": 0, "MaxBytes": 1 << 20, "Topics": [
        {"Topic": "orders", "Partitions": [{"Partition": 0, "FetchOffset": 0, "PartitionMaxBytes": 1 << 20}]}]},
        "Responses.0.Partitions.0.ErrorCode", [(DENIED_TOPIC, [allow(TOPIC, "orders", Operation.READ)])]),
    Case("OffsetCommit", ApiKey.OFFSET_COMMIT, 8, _COMMIT, "Topics.0.Partitions.0.ErrorCode",
         [(DENIED_GROUP, [allow(GROUP, "g", Operation.READ)]), (DENIED_TOPIC, [allow(TOPIC, "*", Operation.READ)])]),
    Case("OffsetFetch", ApiKey.OFFSET_FETCH, 7, {"GroupId": "g", "Topics": [
        {"Name": "orders", "PartitionIndexes": [0]}]}, "ErrorCode",
        [(DENIED_GROUP, [allow(GROUP, "g", Operation.DESCRIBE)])]),
    Case("OffsetFetch topic", ApiKey.OFFSET_FETCH, 7, {"GroupId": "g", "Topics": [
        {"Name": "orders", "PartitionIndexes": [0]}]}, "ErrorCode|Topics.0.Partitions.0.ErrorCode",
        [(DENIED_GROUP, [allow(GROUP, "g", Operation.READ)]),
         (DENIED_TOPIC, [allow(TOPIC, "orders", Operation.WRITE)])]),
    Case("OffsetFetch v8", ApiKey.OFFSET_FETCH, 8, {"Groups": [{"GroupId": "g", "Topics": None}]},
         "Groups.0.ErrorCode", [(DENIED_GROUP, [allow(GROUP, "g", Operation.DESCRIBE)])]),
    Case("OffsetDelete", ApiKey.OFFSET_DELETE, 0, {"GroupId": "g", "Topics": [
        {"Name": "orders", "Partitions": [{"PartitionIndex": 0}]}]}, "ErrorCode",
        [(DENIED_GROUP, [allow(GROUP, "g", Operation.DELETE)])]),
    Case("FindCoordinator", ApiKey.FIND_COORDINATOR, 4, {"KeyType": 0, "CoordinatorKeys": ["g"]},
         "Coordinators.0.ErrorCode", [(DENIED_GROUP, [allow(GROUP, "g", Operation.DESCRIBE)])]),
    Case("FindCoordinator v3", ApiKey.FIND_COORDINATOR, 3, {"Key": "g", "KeyType": 0}, "ErrorCode",
         [(DENIED_GROUP, [allow(GROUP, "*", Operation.READ)])]),
    Case("FindCoordinator transaction", ApiKey.FIND_COORDINATOR, 4, {"KeyType": 1, "CoordinatorKeys": ["tx"]},
         "Coordinators.0.ErrorCode", [(DENIED_TRANSACTION, [allow(TRANSACTION, "tx", Operation.DESCRIBE)])]),
    Case("JoinGroup", ApiKey.JOIN_GROUP, 5, {"GroupId": "g", "SessionTimeoutMs": 10000, "RebalanceTimeoutMs": 10000,
                                             "MemberId": "", "ProtocolType": "consumer",
                                             "Protocols": [{"Name": "range", "Metadata": b""}]},
         "ErrorCode", [(DENIED_GROUP, [allow(GROUP, "g", Operation.READ)])]),
    Case("Heartbeat", ApiKey.HEARTBEAT, 4, {"GroupId": "g", "GenerationId": 1, "MemberId": "m"}, "ErrorCode",
         [(DENIED_GROUP, [allow(GROUP, "g", Operation.READ)])]),
    Case("SyncGroup", ApiKey.SYNC_GROUP, 5, {"GroupId": "g", "GenerationId": 1, "MemberId": "m", "Assignments": [],
                                             "ProtocolType": "consumer", "ProtocolName": "range"},
         "ErrorCode", [(DENIED_GROUP, [allow(GROUP, "g", Operation.ALL)])]),
    Case("LeaveGroup", ApiKey.LEAVE_GROUP, 4, {"GroupId": "g", "Members": [{"MemberId": "m"}]}, "ErrorCode",
         [(DENIED_GROUP, [allow(GROUP, "g", Operation.READ)])]),
    Case("DescribeGroups", ApiKey.DESCRIBE_GROUPS, 5, {"Groups": ["g"]}, "Groups.0.ErrorCode",
         [(DENIED_GROUP, [allow(GROUP, "g", Operation.DESCRIBE)])]),
    Case("DeleteGroups", ApiKey.DELETE_GROUPS, 2, {"GroupsNames": ["g"]}, "Results.0.ErrorCode",
         [(DENIED_GROUP, [allow(GROUP, "g", Operation.DELETE)])]),
    Case("ConsumerGroupDescribe", ApiKey.CONSUMER_GROUP_DESCRIBE, 0, {"GroupIds": ["g"]}, "Groups.0.ErrorCode",
         [(DENIED_GROUP, [allow(GROUP, "g", Operation.DESCRIBE)])]),
    Case("CreateTopics", ApiKey.CREATE_TOPICS, 7, {"Topics": [
        {"Name": "new", "NumPartitions": 1, "ReplicationFactor": 1, "Assignments": [], "Configs": []}],
        "timeoutMs": 5000, "validateOnly": True}, "Topics.0.ErrorCode",
        [(DENIED_TOPIC, [allow(TOPIC, "new", Operation.CREATE)])]),
    Case("CreateTopics by cluster", ApiKey.CREATE_TOPICS, 7, {"Topics": [
        {"Name": "new", "NumPartitions": 1, "ReplicationFactor": 1, "Assignments": [], "Configs": []}],
        "timeoutMs": 5000, "validateOnly": True}, "Topics.0.ErrorCode",
        [(DENIED_TOPIC, [allow(CLUSTER, "kafka-cluster", Operation.CREATE)])]),
    Case("DeleteTopics", ApiKey.DELETE_TOPICS, 6, {"Topics": [{"Name": "gone", "TopicId": NO_ID}], "TimeoutMs": 1000},
         "Responses.0.ErrorCode", [(DENIED_TOPIC, [allow(TOPIC, "gone", Operation.DELETE)])]),
    Case("CreatePartitions", ApiKey.CREATE_PARTITIONS, 3, {"Topics": [{"Name": "orders", "Count": 3}],
                                                           "TimeoutMs": 1000, "ValidateOnly": True},
         "Results.0.ErrorCode", [(DENIED_TOPIC, [allow(TOPIC, "orders", Operation.ALTER)])]),
    Case("DescribeConfigs", ApiKey.DESCRIBE_CONFIGS, 4, {"Resources": [
        {"ResourceType": 2, "ResourceName": "orders", "ConfigurationKeys": None}]}, "Results.0.ErrorCode",
        [(DENIED_TOPIC, [allow(TOPIC, "orders", Operation.ALTER_CONFIGS)])]),
    Case("InitProducerId", ApiKey.INIT_PRODUCER_ID, 4, {"TransactionalId": None, "TransactionTimeoutMs": 60000,
                                                        "ProducerId": -1, "ProducerEpoch": -1},
         "ErrorCode", [(DENIED_CLUSTER, [allow(CLUSTER, "kafka-cluster", Operation.IDEMPOTENT_WRITE)])]),
    Case("DescribeConfigs broker", ApiKey.DESCRIBE_CONFIGS, 4, {"Resources": [
        {"ResourceType": 4, "ResourceName": "1", "ConfigurationKeys": None}]}, "Results.0.ErrorCode",
        [(DENIED_CLUSTER, [allow(CLUSTER, "kafka-cluster", Operation.DESCRIBE_CONFIGS)])]),
    Case("InitProducerId by topic", ApiKey.INIT_PRODUCER_ID, 4, {"TransactionalId": None, "ProducerId": -1,
                                                                 "TransactionTimeoutMs": 60000, "ProducerEpoch": -1},
         "ErrorCode", [(DENIED_CLUSTER, [allow(TOPIC, "logs-", Operation.WRITE, pattern=PatternType.PREFIXED)])]),
    Case("DescribeTopicPartitions", ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, {"Topics": [{"Name": "orders"}],
                                                                          "ResponsePartitionLimit": 100},
         "Topics.0.ErrorCode", [(DENIED_TOPIC, [allow(TOPIC, "orders", Operation.DESCRIBE)])]),
    Case("DescribeUserScramCredentials", ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, {"Users": [{"Name": "nobody"}]},
         "ErrorCode",
         [(DENIED_CLUSTER, [allow(CLUSTER, "kafka-cluster", Operation.DESCRIBE)])]),
    Case("AlterUserScramCredentials", ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, {
        "Deletions": [{"Name": "nobody", "Mechanism": 1}], "Upsertions": []}, "Results.0.ErrorCode",
        [(DENIED_CLUSTER, [allow(CLUSTER, "kafka-cluster", Operation.ALTER)])]),
    Case("DescribeAcls", ApiKey.DESCRIBE_ACLS, 3, _FILTER, "ErrorCode",
         [(DENIED_CLUSTER, [allow(CLUSTER, "kafka-cluster", Operation.DESCRIBE)])]),
    Case("CreateAcls", ApiKey.CREATE_ACLS, 3, {"Creations": [_CREATION]}, "Results.0.ErrorCode",
         [(DENIED_CLUSTER, [allow(CLUSTER, "kafka-cluster", Operation.ALTER)])]),
    Case("DeleteAcls", ApiKey.DELETE_ACLS, 3, {"Filters": [{**_FILTER, "ResourceTypeFilter": 5}]},
         "FilterResults.0.ErrorCode", [(DENIED_CLUSTER, [allow(CLUSTER, "kafka-cluster", Operation.ALTER)])]),
]


class AclTarget(Protocol):
    """Where a case runs: connections by user, and the super user's ACL changes."""

    def client(self, user: str = "alice") -> SaslRawClient:
        """A connection authenticated as ``user``."""

    def grant(self, *bindings: AclBinding) -> None:
        """Create ``bindings``."""

    def revoke_all(self) -> None:
        """Delete every ACL."""


def run_case(target: AclTarget, case: Case) -> None:
    """Denied, granted step by step (each step's denial checked), allowed, revoked and denied at the next request on
    the same connection; the super user allowed."""
    client = target.client()
    for denied, bindings in case.steps:
        answer = client.call(case.api, case.version, case.body)
        assert answer is not None and at(answer, case.error_at) == denied, answer
        target.grant(*bindings)
    answer = client.call(case.api, case.version, case.body)
    assert answer is not None and at(answer, case.error_at) not in DENIALS, answer
    target.revoke_all()
    answer = client.call(case.api, case.version, case.body)
    assert answer is not None and at(answer, case.error_at) == case.steps[0][0], answer
    answer = target.client("admin").call(case.api, case.version, case.body)
    assert answer is not None and at(answer, case.error_at) not in DENIALS


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_each_api_is_denied_then_allowed_then_denied_again_on_revocation(secured: Secured, case: Case) -> None:
    run_case(secured, case)


class WireTarget:
    """A SASL PLAIN listener at ``address`` whose ACLs the super user ``admin`` changes over the wire."""

    def __init__(self, name: str, address: str) -> None:
        self.name = name
        host, port = address.rsplit(":", 1)
        self._address = BrokerAddress(host, int(port))
        self._clients: list[SaslRawClient] = []
        self.admin = self.client("admin")

    def client(self, user: str = "alice") -> SaslRawClient:
        """A PLAIN connection as ``user``."""
        client = SaslRawClient(self._address)
        self._clients.append(client)
        assert client.call(ApiKey.SASL_HANDSHAKE, 1, {"Mechanism": "PLAIN"})
        answer = client.call(ApiKey.SASL_AUTHENTICATE, 2, {"AuthBytes": plain_token(user, PASSWORDS[user])})
        assert answer is not None and answer["ErrorCode"] == 0, (self.name, answer)
        return client

    def grant(self, *bindings: AclBinding) -> None:
        """CreateAcls as the super user."""
        answer = self.admin.call(ApiKey.CREATE_ACLS, 3, {"Creations": [creation_fields(b) for b in bindings]})
        assert answer is not None and all(r["ErrorCode"] == 0 for r in answer["Results"]), (self.name, answer)

    def revoke_all(self) -> None:
        """DeleteAcls of everything, as the super user."""
        answer = self.admin.call(ApiKey.DELETE_ACLS, 3, {"Filters": [filter_fields(AclFilter())]})
        assert answer is not None and answer["FilterResults"][0]["ErrorCode"] == 0, (self.name, answer)

    def close(self) -> None:
        """Close every connection."""
        for client in self._clients:
            client.close()


def serve_with_acls(folder: Path) -> BackgroundCoordinator:
    """``serve`` (the background coordinator, consumer groups included) on a new root with topic ``orders`` (2
    partitions), users alice and admin (PLAIN), the authorizer on and admin its super user; not started."""
    root = StateRoot.open(folder / "root", create=True)
    for user, password in PASSWORDS.items():
        add_user(root, resolve_config(), user, "PLAIN", password, 4096)
    TopicCatalog(root).create("orders", 2)
    return BackgroundCoordinator(root, resolve_config(flags={
        "listener.security.protocol": "SASL_PLAINTEXT", "sasl.enabled.mechanisms": "PLAIN",
        "authorizer.enabled": True, "super.users": "User:admin", "group.initial.rebalance.delay.ms": 0}),
        listen="127.0.0.1:0", target_assignment_runner=driver_assignment_runner(root).targets)


CONSUMER_CASES = [
    Case("ConsumerGroupHeartbeat", ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, {
        "GroupId": "cg", "MemberId": str(uuid.UUID(int=7)), "MemberEpoch": 0, "RebalanceTimeoutMs": 30000,
        "SubscribedTopicNames": ["orders"], "TopicPartitions": []}, "ErrorCode",
        [(DENIED_GROUP, [allow(GROUP, "cg", Operation.READ)]), (DENIED_TOPIC, [allow(TOPIC, "orders",
                                                                                       Operation.DESCRIBE)])]),
]
"""The cases that need a coordinator computing target assignments (KIP-848), as every ``serve`` has."""


@pytest.mark.parametrize("case", CONSUMER_CASES, ids=[case.name for case in CONSUMER_CASES])
def test_consumer_group_apis_on_serve(tmp_path: Path, case: Case) -> None:
    with serve_with_acls(tmp_path) as coordinator:
        assert coordinator.address is not None
        target = WireTarget("serve", coordinator.address)
        try:
            run_case(target, case)
        finally:
            target.close()


def test_requests_for_everything_show_only_what_the_principal_may_describe(secured: Secured) -> None:
    secured.submit(AlterAclsRequest(creations=(allow(GROUP, "g", Operation.READ),)))
    for group in ("g", "hidden"):  # two groups with committed offsets, one visible to alice
        secured.client("admin").call(ApiKey.OFFSET_COMMIT, 8, {**_COMMIT, "GroupId": group})
    client = secured.client()
    assert client.call(ApiKey.METADATA, 12, {"Topics": None})["Topics"] == []  # type: ignore[index]
    assert client.call(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, {"Topics": [], "ResponsePartitionLimit": 10})[
        "Topics"] == []  # type: ignore[index]
    listed = client.call(ApiKey.LIST_GROUPS, 4, {"StatesFilter": []})
    assert [g["GroupId"] for g in listed["Groups"]] == ["g"]  # type: ignore[index]
    fetched = client.call(ApiKey.OFFSET_FETCH, 7, {"GroupId": "g", "Topics": None})
    assert fetched is not None and fetched["ErrorCode"] == 0 and fetched["Topics"] == []
    secured.grant(allow(TOPIC, "orders", Operation.DESCRIBE))
    assert [t["Name"] for t in client.call(ApiKey.METADATA, 12, {"Topics": None})["Topics"]] == [  # type: ignore[index]
        "orders"]
    fetched = client.call(ApiKey.OFFSET_FETCH, 7, {"GroupId": "g", "Topics": None})
    assert fetched is not None and [t["Name"] for t in fetched["Topics"]] == ["orders"]
    secured.grant(allow(CLUSTER, "kafka-cluster", Operation.DESCRIBE))
    listed = client.call(ApiKey.LIST_GROUPS, 4, {"StatesFilter": []})
    assert sorted(g["GroupId"] for g in listed["Groups"]) == ["g", "hidden"]  # type: ignore[index]


def test_a_request_on_several_topics_answers_each_as_allowed(secured: Secured) -> None:
    secured.grant(allow(TOPIC, "orders", Operation.DESCRIBE))
    answer = secured.client().call(ApiKey.METADATA, 12, {"Topics": [{"Name": "secret", "TopicId": NO_ID},
                                                                    {"Name": "orders", "TopicId": NO_ID}]})
    assert answer is not None
    assert {t["Name"]: t["ErrorCode"] for t in answer["Topics"]} == {"orders": 0, "secret": DENIED_TOPIC}
    commit = {**_COMMIT, "Topics": [*_COMMIT["Topics"], {"Name": "secret", "Partitions": [
        {"PartitionIndex": 0, "CommittedOffset": 1, "CommittedMetadata": ""}]}]}
    secured.grant(allow(GROUP, "g", Operation.READ), allow(TOPIC, "orders", Operation.READ))
    answer = secured.client().call(ApiKey.OFFSET_COMMIT, 8, commit)
    assert answer is not None
    assert {t["Name"]: t["Partitions"][0]["ErrorCode"] for t in answer["Topics"]} == {
        "orders": 0, "secret": DENIED_TOPIC}


def test_kafka_python_consumes_commits_and_produces_only_as_allowed(secured: Secured) -> None:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.errors import GroupAuthorizationFailedError, TopicAuthorizationFailedError

    sasl = {"bootstrap_servers": secured.stack.running.bootstrap, "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "PLAIN", "sasl_plain_username": "alice", "sasl_plain_password": PASSWORDS["alice"],
            "request_timeout_ms": 5000}
    producer = KafkaProducer(**sasl, max_block_ms=5000, retries=0)
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send("orders", b"v", partition=0).get(timeout=10)
        secured.grant(allow(TOPIC, "orders", Operation.WRITE))
        producer.send("orders", b"v", partition=0).get(timeout=10)
    finally:
        producer.close(timeout=5)
    consumer = KafkaConsumer("orders", **sasl, group_id="g", auto_offset_reset="earliest", enable_auto_commit=False,
                             consumer_timeout_ms=5000, session_timeout_ms=10000, heartbeat_interval_ms=500)
    try:
        with pytest.raises(GroupAuthorizationFailedError):
            consumer.poll(timeout_ms=5000)
        secured.grant(allow(GROUP, "g", Operation.READ))
        with pytest.raises(TopicAuthorizationFailedError):
            for _ in range(5):
                consumer.poll(timeout_ms=1000)
        secured.grant(allow(TOPIC, "orders", Operation.READ))
        records = []
        for _ in range(20):  # a fetch answered before the grant may still raise once
            with contextlib.suppress(TopicAuthorizationFailedError):
                records += [r for batch in consumer.poll(timeout_ms=500).values() for r in batch]
            if records:
                break
        assert [r.value for r in records] == [b"v"]
        consumer.commit()
    finally:
        consumer.close(autocommit=False)


def test_kafka_python_admin_creates_describes_and_deletes_acls(secured: Secured) -> None:
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        KafkaAdminClient,
        ResourcePattern,
        ResourcePatternFilter,
    )
    from kafka.admin import ResourceType as KafkaResourceType
    from kafka.errors import ClusterAuthorizationFailedError, NoError

    def admin(user: str) -> KafkaAdminClient:
        return KafkaAdminClient(bootstrap_servers=secured.stack.running.bootstrap, security_protocol="SASL_PLAINTEXT",
                                sasl_mechanism="PLAIN", sasl_plain_username=user, sasl_plain_password=PASSWORDS[user],
                                request_timeout_ms=5000)

    every = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                      ResourcePatternFilter(KafkaResourceType.ANY, None, ACLResourcePatternType.ANY))
    acl = ACL(ALICE, "*", ACLOperation.READ, ACLPermissionType.ALLOW,
              ResourcePattern(KafkaResourceType.TOPIC, "logs-", ACLResourcePatternType.PREFIXED))
    root, alice = admin("admin"), admin("alice")
    try:
        assert root.create_acls([acl])["succeeded"] == [acl]
        acls, _ = root.describe_acls(every)
        assert acls == [acl]
        with pytest.raises(ClusterAuthorizationFailedError):
            alice.describe_acls(every)
        ((_, deleted, error),) = root.delete_acls([every])
        assert deleted == [acl] and error is NoError
        assert root.describe_acls(every)[0] == []
    finally:
        root.close()
        alice.close()
