"""The client x mechanism x credentials matrix against ``serve`` and against the Kafka broker configured alike:
every real client (kafka-python, confluent-kafka, aiokafka, kafkajs, Kafka's Java admin client) observes the same
outcome on both (SASL_PLAINTEXT and SASL_SSL; PLAIN, SCRAM-SHA-256 and
SCRAM-SHA-512; the right password, a wrong one, and no SASL at all). Marked ``faults``: ``make test-faults`` runs
it; ``make test`` keeps one client per mechanism on ``serve`` (tests/security/test_sasl_listener.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench.secured_broker import MECHANISMS, SecuredBroker, start_secured_broker
from bench.secured_certificates import Certificates
from groupcoord.admin.users import add_user
from groupcoord.config import resolve_config
from groupcoord.host.background import BackgroundCoordinator
from groupcoord.state_root import StateRoot
from tests.security.client_outcomes import CLIENTS, Attempt

pytestmark = [pytest.mark.faults, pytest.mark.integration, pytest.mark.kafka, pytest.mark.slow]

USER, PASSWORD = "alice", "alice-parity-pw"
PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
CREDENTIALS = {"right": PASSWORD, "wrong": "not-the-password", "none": None}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory, certificates: Certificates) -> Iterator[SecuredBroker]:
    """The Kafka broker with both secured listeners and ``alice`` for every mechanism."""
    secured = start_secured_broker(tmp_path_factory.mktemp("secured-broker"), certificates, {USER: PASSWORD})
    try:
        yield secured
    finally:
        secured.broker.stop()


def _serve_config(protocol: str, certificates: Certificates) -> dict[str, object]:
    return {"listener.security.protocol": protocol, "sasl.enabled.mechanisms": ",".join(MECHANISMS),
            "ssl.keystore.location": str(certificates.server_cert), "ssl.key.location": str(certificates.server_key)}


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory, certificates: Certificates) -> Iterator[dict[str, str]]:
    """``serve`` (the background coordinator) with each protocol, on roots holding ``alice`` for every mechanism;
    the bootstrap address by protocol."""
    started: list[BackgroundCoordinator] = []
    addresses: dict[str, str] = {}
    try:
        for protocol in PROTOCOLS:
            root = StateRoot.open(tmp_path_factory.mktemp(f"serve-{protocol}") / "root", create=True)
            for mechanism in MECHANISMS:
                add_user(root, resolve_config(), USER, mechanism, PASSWORD, 4096)
            coordinator = BackgroundCoordinator(
                root, resolve_config(flags=_serve_config(protocol, certificates)), listen="127.0.0.1:0")
            started.append(coordinator)
            addresses[protocol] = coordinator.start()
        yield addresses
    finally:
        for coordinator in started:
            coordinator.stop()


CASES = [(client, protocol, mechanism, credentials)
         for client in sorted(CLIENTS) for protocol in PROTOCOLS for mechanism in MECHANISMS
         for credentials in sorted(CREDENTIALS)
         if credentials != "none" or mechanism == MECHANISMS[0]]  # without credentials the mechanism plays no part
"""Every client, protocol, mechanism and credential case, the mechanism taken once for a client with none."""


@pytest.mark.parametrize(("client", "protocol", "mechanism", "credentials"), CASES)
def test_serve_and_kafka_give_every_client_the_same_outcome(
        broker: SecuredBroker, serve: dict[str, str], certificates: Certificates, client: str, protocol: str,
        mechanism: str, credentials: str) -> None:
    password = CREDENTIALS[credentials]
    user = None if password is None else USER

    def outcome(bootstrap: str) -> str:
        return CLIENTS[client](Attempt(bootstrap, protocol, mechanism, user, password or "", str(certificates.ca)))

    expected = outcome(broker.bootstrap(protocol))
    assert outcome(serve[protocol]) == expected
    assert (expected == "ok") == (credentials == "right")
