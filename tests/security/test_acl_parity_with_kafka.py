"""ACL parity with Kafka (the oracle): the per-API scenario of ``test_acl_enforcement`` (denied, granted step by step,
revoked) against ``serve`` and against the Kafka broker with StandardAuthorizer and the same super user, as ``alice``
over SASL_PLAINTEXT with raw frames of Kafka's schemas; ACLs are created and deleted by the super user with
CreateAcls/DeleteAcls on both. Every step's answer must be the same authorization outcome (the code when it is an
authorization error). Kafka applies an ACL once its broker has the metadata, a few milliseconds after CreateAcls
answers, so the broker's answer is retried briefly; serve's must hold at the next request. Marked ``faults``."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.secured_broker import SecuredBroker, start_secured_broker
from bench.secured_certificates import Certificates
from groupcoord.admin.users import add_user
from groupcoord.config import resolve_config
from groupcoord.host.background import BackgroundCoordinator
from groupcoord.security.acl_wire import creation_fields, filter_fields
from groupcoord.security.acls import AclBinding, AclFilter
from groupcoord.server.api import BrokerAddress
from groupcoord.server.versions import ApiKey
from groupcoord.state_root import StateRoot
from groupcoord.topics import TopicCatalog
from tests.security.conftest import SaslRawClient, plain_token
from tests.security.test_acl_enforcement import CASES, PASSWORDS, Case, at

pytestmark = [pytest.mark.faults, pytest.mark.integration, pytest.mark.kafka, pytest.mark.slow]

AUTHORIZATION_ERRORS = frozenset({29, 30, 31, 53})
SETTLE_SECONDS = 5.0


def _outcome(code: int) -> int | str:
    return code if code in AUTHORIZATION_ERRORS else "passed"


class Target:
    """One target: a super user's connection for ACL changes, and alice's for the cases."""

    def __init__(self, name: str, address: str, *, retry: bool) -> None:
        self.name = name
        host, port = address.rsplit(":", 1)
        self._address = BrokerAddress(host, int(port))
        self.retry = retry
        self.admin = self.connect("admin")

    def connect(self, user: str) -> SaslRawClient:
        """A PLAIN connection as ``user``."""
        client = SaslRawClient(self._address)
        assert client.call(ApiKey.SASL_HANDSHAKE, 1, {"Mechanism": "PLAIN"})
        answer = client.call(ApiKey.SASL_AUTHENTICATE, 2, {"AuthBytes": plain_token(user, PASSWORDS[user])})
        assert answer is not None and answer["ErrorCode"] == 0, (self.name, answer)
        return client

    def grant(self, bindings: list[AclBinding]) -> None:
        """CreateAcls as the super user."""
        answer = self.admin.call(ApiKey.CREATE_ACLS, 3, {"Creations": [creation_fields(b) for b in bindings]})
        assert answer is not None and all(r["ErrorCode"] == 0 for r in answer["Results"]), (self.name, answer)

    def revoke_all(self) -> None:
        """DeleteAcls of everything, as the super user."""
        answer = self.admin.call(ApiKey.DELETE_ACLS, 3, {"Filters": [filter_fields(AclFilter())]})
        assert answer is not None and answer["FilterResults"][0]["ErrorCode"] == 0, (self.name, answer)

    def outcome(self, client: SaslRawClient, case: Case, expected: int | str | None) -> tuple[int | str, int]:
        """The authorization outcome of ``case`` and its full code (retried until ``expected`` on the broker)."""
        deadline = time.monotonic() + (SETTLE_SECONDS if self.retry and expected is not None else 0)
        while True:
            try:
                answer = client.call(case.api, case.version, case.body)
            except TimeoutError:
                raise AssertionError(f"{self.name} did not answer {case.name}") from None
            assert answer is not None, (self.name, case.name)
            try:
                code = int(at(answer, case.error_at))
            except (IndexError, KeyError):
                raise AssertionError(f"{self.name} answered {case.name} without {case.error_at}: {answer}") from None
            if _outcome(code) == expected or time.monotonic() >= deadline:
                return _outcome(code), code
            time.sleep(0.05)


@pytest.fixture(scope="module")
def targets(tmp_path_factory: pytest.TempPathFactory, certificates: Certificates) -> Iterator[tuple[Target, Target]]:
    """serve and the broker, both with topic ``orders`` (2 partitions), users alice and admin, the authorizer on
    and admin a super user."""
    broker: SecuredBroker = start_secured_broker(
        tmp_path_factory.mktemp("acl-broker"), certificates, PASSWORDS,
        properties={"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                    # ANONYMOUS: the PLAINTEXT and controller listeners the fixture and the broker itself use.
                    "super.users": "User:admin;User:ANONYMOUS", "group.initial.rebalance.delay.ms": "0"})
    root = StateRoot.open(Path(tmp_path_factory.mktemp("acl-serve")) / "root", create=True)
    for user, password in PASSWORDS.items():
        add_user(root, resolve_config(), user, "PLAIN", password, 4096)
    TopicCatalog(root).create("orders", 2)
    coordinator = BackgroundCoordinator(root, resolve_config(flags={
        "listener.security.protocol": "SASL_PLAINTEXT", "sasl.enabled.mechanisms": "PLAIN",
        "authorizer.enabled": True, "super.users": "User:admin", "group.initial.rebalance.delay.ms": 0}),
        listen="127.0.0.1:0")
    try:
        serve = Target("serve", coordinator.start(), retry=False)
        kafka = Target("kafka", broker.sasl_plaintext, retry=True)
        answer = kafka.admin.call(ApiKey.CREATE_TOPICS, 7, {"Topics": [
            {"Name": "orders", "NumPartitions": 2, "ReplicationFactor": 1, "Assignments": [], "Configs": []}],
            "timeoutMs": 30000})
        assert answer is not None and answer["Topics"][0]["ErrorCode"] in (0, 36), answer
        _wait_for_group_coordinator(kafka)
        yield serve, kafka
    finally:
        coordinator.stop()
        broker.broker.stop()


def _wait_for_group_coordinator(target: Target) -> None:
    """Until the broker's group coordinator serves group ``g`` (its first FindCoordinator creates the offsets
    topic; until it is loaded, the group APIs answer NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = target.admin.call(ApiKey.FIND_COORDINATOR, 4, {"KeyType": 0, "CoordinatorKeys": ["g"]})
        fetched = target.admin.call(ApiKey.OFFSET_FETCH, 7, {"GroupId": "g", "Topics": None})
        if found and fetched and found["Coordinators"][0]["ErrorCode"] == 0 and fetched["ErrorCode"] == 0:
            return
        time.sleep(0.2)
    raise AssertionError("the broker's group coordinator did not load")


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_each_api_answers_as_kafka_under_the_same_acls(targets: tuple[Target, Target], case: Case) -> None:
    seen: dict[str, list[tuple[int | str, int]]] = {}
    serve = targets[0]
    for target in targets:
        client = target.connect("alice")
        steps: list[tuple[int | str, int]] = []
        try:
            target.revoke_all()
            for index, (_, bindings) in enumerate([*case.steps, (0, [])]):
                expected = seen["serve"][index][0] if target is not serve else None
                steps.append(target.outcome(client, case, expected))
                if bindings:
                    target.grant(list(bindings))
            target.revoke_all()
            expected = seen["serve"][len(steps)][0] if target is not serve else None
            steps.append(target.outcome(client, case, expected))
        finally:
            client.close()
        seen[target.name] = steps
    assert [s[0] for s in seen["serve"]] == [s[0] for s in seen["kafka"]], seen
