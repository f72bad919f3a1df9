"""Kafka's own ``kafka-acls.sh`` (``org.apache.kafka.tools.AclCommand`` of Kafka 4.4, Kafka's Java Admin client
underneath) adds, lists and removes ACLs on a SASL ``serve`` with the authorizer on, as a super user."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from groupcoord.admin.acls import stored_acls
from groupcoord.admin.users import add_user
from groupcoord.config import resolve_config
from groupcoord.config.jars import kafka_classpath
from groupcoord.devbroker.java_build import java_tool
from groupcoord.host.background import BackgroundCoordinator
from groupcoord.state_root import StateRoot

pytestmark = [pytest.mark.integration, pytest.mark.kafka]

PASSWORD = "admin-tools-pw"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[StateRoot, str, Path]]:
    """serve with SASL PLAIN, the authorizer on, ``admin`` its super user; the command config for admin."""
    folder = tmp_path_factory.mktemp("kafka-acls")
    root = StateRoot.open(folder / "root", create=True)
    add_user(root, resolve_config(), "admin", "PLAIN", PASSWORD, 4096)
    config = folder / "admin.properties"
    config.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config="
                      "org.apache.kafka.common.security.plain.PlainLoginModule required "
                      f'username="admin" password="{PASSWORD}";\n')
    flags = {"listener.security.protocol": "SASL_PLAINTEXT", "sasl.enabled.mechanisms": "PLAIN",
             "authorizer.enabled": True, "super.users": "User:admin"}
    with BackgroundCoordinator(root, resolve_config(flags=flags), listen="127.0.0.1:0") as coordinator:
        assert coordinator.address is not None
        yield root, coordinator.address, config


def _kafka_acls(address: str, config: Path, *args: str) -> str:
    done = subprocess.run([java_tool("java"), "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", kafka_classpath(),
                           "org.apache.kafka.tools.AclCommand", "--bootstrap-server", address, "--command-config",
                           str(config), *args], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr + done.stdout
    return done.stdout


def test_kafka_acls_adds_lists_and_removes(served: tuple[StateRoot, str, Path]) -> None:
    root, address, config = served
    added = _kafka_acls(address, config, "--add", "--allow-principal", "User:alice", "--operation", "Read",
                        "--topic", "orders", "--group", "app-", "--resource-pattern-type", "prefixed")
    assert "Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, patternType=PREFIXED)`" in added
    assert sorted((b.resource_type.name, b.name, b.pattern_type.name) for b in stored_acls(root)) == [
        ("GROUP", "app-", "PREFIXED"), ("TOPIC", "orders", "PREFIXED")]
    listed = _kafka_acls(address, config, "--list", "--topic", "orders", "--resource-pattern-type", "match")
    assert "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)" in listed
    _kafka_acls(address, config, "--remove", "--force", "--topic", "orders", "--resource-pattern-type", "prefixed")
    assert [(b.resource_type.name, b.name) for b in stored_acls(root)] == [("GROUP", "app-")]
