"""Users in the state root: ``groupcoord users`` creates the first one by taking the lease, a SASL ``serve``
authenticates them, Kafka's admin client (librdkafka) adds and removes SCRAM users over the wire, and no stored byte
reveals a password."""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._scram import (
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kafka import KafkaConsumer

from groupcoord.admin.users import stored_users
from groupcoord.cli.main import main
from groupcoord.config import resolve_config
from groupcoord.host.background import BackgroundCoordinator
from groupcoord.log.delta import DeltaRecordLog
from groupcoord.state_root import StateRoot

pytestmark = pytest.mark.integration

PASSWORDS = {"alice": "alice-pw-Zq81", "bob": "bob-pw-Lx27", "carol": "carol-pw-Rt55"}
SASL = {"listener.security.protocol": "SASL_PLAINTEXT", "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "group.initial.rebalance.delay.ms": 0}


def _add(root: Path, user: str, mechanism: str, monkeypatch: pytest.MonkeyPatch, *extra: str) -> int:
    monkeypatch.setattr("sys.stdin", io.StringIO(PASSWORDS[user] + "\n"))
    return main(["users", "add", user, "--mechanism", mechanism, "--password-stdin", "--iterations", "4096",
                 "--state-root", str(root), *extra])


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[StateRoot, str]]:
    """A state root whose first users were added with the CLI (taking the lease), then served with SASL."""
    path = tmp_path_factory.mktemp("users") / "root"
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert _add(path, "alice", "SCRAM-SHA-256", monkeypatch) == 0
        password_file = path.parent / "bob.pw"
        password_file.write_text(PASSWORDS["bob"] + "\n")
        assert main(["users", "add", "bob", "--mechanism", "PLAIN", "--password-file", str(password_file),
                     "--state-root", str(path)]) == 0
        password_file.unlink()
    root = StateRoot.open(path)
    with BackgroundCoordinator(root, resolve_config(flags=SASL), listen="127.0.0.1:0") as coordinator:
        assert coordinator.address is not None
        yield root, coordinator.address


def _topics(bootstrap: str, user: str, mechanism: str, password: str | None = None) -> set[str]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, security_protocol="SASL_PLAINTEXT",
                             sasl_mechanism=mechanism, sasl_plain_username=user,
                             sasl_plain_password=password or PASSWORDS[user], request_timeout_ms=5000)
    try:
        return set(consumer.topics())
    finally:
        consumer.close()


def _admin(bootstrap: str, user: str, password: str, mechanism: str = "SCRAM-SHA-256") -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
                        "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password})


def test_cli_users_authenticate_against_serve(served: tuple[StateRoot, str]) -> None:
    root, bootstrap = served
    assert _topics(bootstrap, "alice", "SCRAM-SHA-256") == set()
    assert _topics(bootstrap, "bob", "PLAIN") == set()
    assert [(u, m) for u, m, _ in stored_users(root).items()] == [("alice", "SCRAM-SHA-256"), ("bob", "PLAIN")]


def test_kafka_admin_client_adds_describes_and_removes_scram_users(served: tuple[StateRoot, str]) -> None:
    _, bootstrap = served
    admin = _admin(bootstrap, "alice", PASSWORDS["alice"])
    upsert = UserScramCredentialUpsertion("carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096),
                                          PASSWORDS["carol"].encode())
    admin.alter_user_scram_credentials([upsert])["carol"].result(10)
    described = admin.describe_user_scram_credentials(["carol", "alice"])
    assert isinstance(described, dict)
    carol = described["carol"].result(10)
    assert [(info.mechanism, info.iterations) for info in carol.scram_credential_infos] == [
        (ScramMechanism.SCRAM_SHA_512, 4096)]
    assert _topics(bootstrap, "carol", "SCRAM-SHA-512") == set()

    admin.alter_user_scram_credentials([UserScramCredentialDeletion("carol", ScramMechanism.SCRAM_SHA_512)])[
        "carol"].result(10)
    with pytest.raises(KafkaException, match=r"RESOURCE_NOT_FOUND|does not exist"):
        described = admin.describe_user_scram_credentials(["carol"])
        assert isinstance(described, dict)
        described["carol"].result(10)
    with pytest.raises(KafkaException, match=r"RESOURCE_NOT_FOUND|does not exist"):
        admin.alter_user_scram_credentials([UserScramCredentialDeletion("carol", ScramMechanism.SCRAM_SHA_512)])[
            "carol"].result(10)


def test_cli_reaches_a_sasl_holder_with_its_own_credentials(
        served: tuple[StateRoot, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    root, bootstrap = served
    auth = ["--conf", "spark.groupcoord.listener.security.protocol=SASL_PLAINTEXT",
            "--conf", "spark.groupcoord.sasl.mechanism=SCRAM-SHA-256", "--conf", "spark.groupcoord.sasl.username=alice"]
    monkeypatch.setenv("GROUPCOORD_SASL_PASSWORD", "wrong")
    assert _add(root.path, "carol", "SCRAM-SHA-512", monkeypatch, *auth) == 1
    error = capsys.readouterr().err
    assert "authentication as alice with SCRAM-SHA-256" in error and "wrong" not in error
    monkeypatch.setenv("GROUPCOORD_SASL_PASSWORD", PASSWORDS["alice"])
    assert _add(root.path, "carol", "SCRAM-SHA-512", monkeypatch, *auth) == 0
    assert _topics(bootstrap, "carol", "SCRAM-SHA-512") == set()


def test_a_password_is_refused_on_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["users", "list", "--conf", "spark.groupcoord.sasl.password=hunter2"]) == 2
    error = capsys.readouterr().err
    assert "refused" in error and "hunter2" not in error and error.count("\n") == 1


def _forms(password: str) -> set[bytes]:
    return {password.encode(), password.encode("utf-16-le"), password.encode().hex().encode(),
            base64.b64encode(password.encode()), base64.b64encode(password.encode()).rstrip(b"=")}


def test_no_stored_byte_reveals_a_password(served: tuple[StateRoot, str]) -> None:
    root, _ = served
    files = [p for p in root.path.rglob("*") if p.is_file()]
    records = DeltaRecordLog(root.log_path).load().records  # decoded: Parquet pages may be compressed
    assert any(r.kind == "user_credential" for r in records)
    for password in PASSWORDS.values():
        forms = _forms(password)
        for path in files:
            content = path.read_bytes()
            assert not any(form in content for form in forms), f"{path} holds a form of a password"
        for record in records:
            stored = record.key.encode() + (record.value or b"")
            assert not any(form in stored for form in forms), f"record {record.kind} {record.key} holds a password"
