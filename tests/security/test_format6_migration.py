"""Format 6 (ACLs): a root written by the last format-5 release (the committed fixture, made by the main branch's
code before ACLs) migrates without a byte of its tables changing, keeps its offsets and its user, takes its first
ACLs through ``groupcoord acls add`` (the lease), shows them in the ``acls`` table, and serves them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.errors import GroupAuthorizationFailedError

from groupcoord.admin.acls import stored_acls
from groupcoord.admin.users import stored_users
from groupcoord.cli.main import main
from groupcoord.config import resolve_config
from groupcoord.host.background import BackgroundCoordinator
from groupcoord.state.schema import ACLS
from groupcoord.state.views import read_view
from groupcoord.state_root import STATE_FORMAT_VERSION, StateRoot
from tests.fixtures.make_state_format5 import ADMIN_PASSWORD
from tests.security.test_format5_migration import table_bytes

pytestmark = pytest.mark.integration

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "state_format5"


def test_a_format5_root_migrates_takes_acls_and_serves_them(tmp_path: Path) -> None:
    copy = tmp_path / "root"
    shutil.copytree(FIXTURE, copy)
    assert json.loads((copy / "_groupcoord" / "format.json").read_text()) == {"format": 5}
    before = table_bytes(copy)
    root = StateRoot.open(copy)
    assert root.format_version == STATE_FORMAT_VERSION == 6
    assert table_bytes(copy) == before

    assert main(["acls", "add", "--allow-principal", "User:admin", "--operation", "Read", "--group", "g1",
                 "--topic", "orders", "--state-root", str(copy)]) == 0
    assert [(b.resource_type.name, b.name) for b in sorted(stored_acls(root))] == [("TOPIC", "orders"),
                                                                                  ("GROUP", "g1")]
    assert [(u, m) for u, m, _ in stored_users(root).items()] == [("admin", "SCRAM-SHA-256")]
    shown = read_view(root, ACLS)
    assert sorted(zip(shown.column("resource_type").to_pylist(), shown.column("resource_name").to_pylist(),
                      shown.column("operation").to_pylist(), strict=True)) == [("GROUP", "g1", "READ"),
                                                                               ("TOPIC", "orders", "READ")]

    config = resolve_config(flags={"listener.security.protocol": "SASL_PLAINTEXT", "authorizer.enabled": True})
    with BackgroundCoordinator(root, config, listen="127.0.0.1:0") as coordinator:
        def consumer(group: str) -> KafkaConsumer:
            return KafkaConsumer(bootstrap_servers=coordinator.address, security_protocol="SASL_PLAINTEXT",
                                 sasl_mechanism="SCRAM-SHA-256", sasl_plain_username="admin",
                                 sasl_plain_password=ADMIN_PASSWORD, request_timeout_ms=5000, group_id=group,
                                 enable_auto_commit=False)
        allowed, denied = consumer("g1"), consumer("g2")
        try:
            assert allowed.topics() == {"orders"}
            assert allowed.committed(TopicPartition("orders", 1)) == 1  # the migrated offsets, through the ACLs
            with pytest.raises(GroupAuthorizationFailedError):
                denied.committed(TopicPartition("orders", 0))
        finally:
            allowed.close()
            denied.close()
