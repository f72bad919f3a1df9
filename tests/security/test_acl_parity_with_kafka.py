"""ACL parity with Kafka (the oracle): the per-API scenarios of ``test_acl_enforcement`` (denied, granted step by step,
revoked) against ``serve`` and against the Kafka broker with StandardAuthorizer and the same super user, as ``alice``
over SASL_PLAINTEXT with raw frames of Kafka's schemas; ACLs are created and deleted by the super user with
CreateAcls/DeleteAcls on both. Every step's answer must be the same authorization outcome (the code when it is an
authorization error). Kafka applies an ACL once its broker has the metadata, a few milliseconds after CreateAcls
answers, so the broker's answer is retried briefly; serve's must hold at the next request. Marked ``faults``."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from bench.secured_broker import SecuredBroker, start_secured_broker
from bench.secured_certificates import Certificates
from groupcoord.server.versions import ApiKey
from tests.security.conftest import SaslRawClient
from tests.security.test_acl_enforcement import (
    CASES,
    CONSUMER_CASES,
    PASSWORDS,
    Case,
    WireTarget,
    at,
    serve_with_acls,
)

pytestmark = [pytest.mark.faults, pytest.mark.integration, pytest.mark.kafka, pytest.mark.slow]

AUTHORIZATION_ERRORS = frozenset({29, 30, 31, 53})
SETTLE_SECONDS = 5.0
ALL_CASES = [*CASES, *CONSUMER_CASES]


def _outcome(code: int) -> int | str:
    return code if code in AUTHORIZATION_ERRORS else "passed"


def outcome(target: WireTarget, client: SaslRawClient, case: Case,
            expected: int | str | None) -> tuple[int | str, int]:
    """The authorization outcome of ``case`` on ``target`` and its full code; with an ``expected`` outcome (the
    broker, after serve), retried until it comes or :data:`SETTLE_SECONDS` pass."""
    deadline = time.monotonic() + (SETTLE_SECONDS if expected is not None else 0)
    while True:
        try:
            answer = client.call(case.api, case.version, case.body)
        except TimeoutError:
            raise AssertionError(f"{target.name} did not answer {case.name}") from None
        assert answer is not None, (target.name, case.name)
        try:
            code = int(at(answer, case.error_at))
        except (IndexError, KeyError):
            raise AssertionError(f"{target.name} answered {case.name} without {case.error_at}: {answer}") from None
        if _outcome(code) == expected or time.monotonic() >= deadline:
            return _outcome(code), code
        time.sleep(0.05)


def _wait_for_group_coordinator(target: WireTarget) -> None:
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


@pytest.fixture(scope="module")
def targets(tmp_path_factory: pytest.TempPathFactory,
            certificates: Certificates) -> Iterator[tuple[WireTarget, WireTarget]]:
    """serve and the broker, both with topic ``orders`` (2 partitions), users alice and admin, the authorizer on
    and admin a super user."""
    broker: SecuredBroker = start_secured_broker(
        tmp_path_factory.mktemp("acl-broker"), certificates, PASSWORDS,
        properties={"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                    # ANONYMOUS: the PLAINTEXT and controller listeners the fixture and the broker itself use.
                    "super.users": "User:admin;User:ANONYMOUS", "group.initial.rebalance.delay.ms": "0"})
    coordinator = serve_with_acls(tmp_path_factory.mktemp("acl-serve"))
    targets: list[WireTarget] = []
    try:
        targets.append(WireTarget("serve", coordinator.start()))
        targets.append(WireTarget("kafka", broker.sasl_plaintext))
        answer = targets[1].admin.call(ApiKey.CREATE_TOPICS, 7, {"Topics": [
            {"Name": "orders", "NumPartitions": 2, "ReplicationFactor": 1, "Assignments": [], "Configs": []}],
            "timeoutMs": 30000})
        assert answer is not None and answer["Topics"][0]["ErrorCode"] in (0, 36), answer
        _wait_for_group_coordinator(targets[1])
        yield targets[0], targets[1]
    finally:
        for target in targets:
            target.close()
        coordinator.stop()
        broker.broker.stop()


@pytest.mark.parametrize("case", ALL_CASES, ids=[case.name for case in ALL_CASES])
def test_each_api_answers_as_kafka_under_the_same_acls(targets: tuple[WireTarget, WireTarget], case: Case) -> None:
    seen: dict[str, list[tuple[int | str, int]]] = {}
    for target in targets:
        client = target.client()
        steps: list[tuple[int | str, int]] = []
        target.revoke_all()
        for index, (_, bindings) in enumerate([*case.steps, (0, [])]):
            steps.append(outcome(target, client, case, seen["serve"][index][0] if seen else None))
            target.grant(*bindings)
        target.revoke_all()
        steps.append(outcome(target, client, case, seen["serve"][len(steps)][0] if seen else None))
        seen[target.name] = steps
    print(case.name, seen)
    assert [s[0] for s in seen["serve"]] == [s[0] for s in seen["kafka"]], seen
