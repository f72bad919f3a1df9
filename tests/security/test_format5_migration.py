"""Format 5 (users' credentials): a root written by the last format-4 release (the committed fixture) migrates
without a byte of its tables changing, keeps its offsets, and takes its first user, who then authenticates."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from kafka import KafkaConsumer, TopicPartition

from groupcoord.cli.main import main
from groupcoord.config import resolve_config
from groupcoord.coordinator import CoordinatorConfig, GroupCoordinator
from groupcoord.coordinator.records import decode_record
from groupcoord.host.background import BackgroundCoordinator
from groupcoord.log.delta import DeltaRecordLog
from groupcoord.state_root import STATE_FORMAT_VERSION, StateRoot

pytestmark = pytest.mark.integration

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "state_format4"


def table_bytes(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` but the format marker, with its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != "format.json"}


def test_a_format4_root_migrates_and_authenticates_its_first_user(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "root"
    shutil.copytree(FIXTURE, copy)
    assert json.loads((copy / "_groupcoord" / "format.json").read_text()) == {"format": 4}
    before = table_bytes(copy)
    root = StateRoot.open(copy)
    assert root.format_version == STATE_FORMAT_VERSION == 6
    assert table_bytes(copy) == before

    monkeypatch.setattr("sys.stdin", io.StringIO("first-user-pw\n"))
    assert main(["users", "add", "admin", "--mechanism", "SCRAM-SHA-512", "--password-stdin",
                 "--iterations", "4096", "--state-root", str(copy)]) == 0
    core = GroupCoordinator(CoordinatorConfig())
    for record in DeltaRecordLog(root.log_path).load().records:
        core.replay(decode_record(record))
    state = core.hard_state()
    assert {(g, t, p): v.offset for g, t, p, v in state.offsets} == {
        ("g1", "orders", 0): 2, ("g1", "orders", 1): 1, ("g2", "orders", 0): 1}
    assert [(user, mechanism) for user, mechanism, _ in state.credentials] == [("admin", "SCRAM-SHA-512")]

    config = resolve_config(flags={"listener.security.protocol": "SASL_PLAINTEXT"})
    with BackgroundCoordinator(root, config, listen="127.0.0.1:0") as coordinator:
        consumer = KafkaConsumer(bootstrap_servers=coordinator.address, security_protocol="SASL_PLAINTEXT",
                                 sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="admin",
                                 sasl_plain_password="first-user-pw", request_timeout_ms=5000, group_id="g1",
                                 enable_auto_commit=False)
        try:
            assert consumer.topics() == {"orders"}
            assert consumer.committed(TopicPartition("orders", 1)) == 1  # the migrated offsets, over SASL
        finally:
            consumer.close()
