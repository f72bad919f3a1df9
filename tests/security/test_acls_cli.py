"""``groupcoord acls``: add, list and remove through the lease (no holder) and through a live SASL holder with the
authorizer on (a super user may, another user gets CLUSTER_AUTHORIZATION_FAILED); bad input is one line, a non-zero
exit and no state change."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from groupcoord.admin.acls import stored_acls
from groupcoord.cli.main import main
from groupcoord.config import resolve_config
from groupcoord.host.background import BackgroundCoordinator
from groupcoord.log.delta import DeltaRecordLog
from groupcoord.state_root import StateRoot

pytestmark = pytest.mark.integration

PASSWORDS = {"admin": "admin-pw-1", "alice": "alice-pw-1"}


@pytest.fixture(scope="module")
def root_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A state root with users admin and alice (PLAIN), created through the lease."""
    path = tmp_path_factory.mktemp("acls") / "root"
    with pytest.MonkeyPatch.context() as monkeypatch:
        for user, password in PASSWORDS.items():
            monkeypatch.setattr("sys.stdin", io.StringIO(password + "\n"))
            assert main(["users", "add", user, "--mechanism", "PLAIN", "--password-stdin",
                         "--state-root", str(path)]) == 0
    return path


def _acls(root_path: Path, *args: str) -> int:
    try:
        return main(["acls", *args, "--state-root", str(root_path)])
    except SystemExit as exc:  # argparse's own usage errors
        return int(exc.code or 0)


def test_add_list_remove_through_the_lease(root_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _acls(root_path, "add", "add", "--allow-principal", "User:alice", "--operation", "Read",
                 "--operation", "describe", "--topic", "orders", "--group", "g") == 2  # "add" twice: a usage error
    capsys.readouterr()
    assert _acls(root_path, "add", "--allow-principal", "User:alice", "--operation", "Read", "--operation",
                 "describe", "--topic", "orders", "--group", "g") == 0
    assert _acls(root_path, "add", "--deny-principal", "User:*", "--deny-host", "10.0.0.9", "--operation", "All",
                 "--topic", "logs-", "--resource-pattern-type", "prefixed") == 0
    assert capsys.readouterr().out.count("Added ACL") == 5
    assert _acls(root_path, "list") == 0
    listing = capsys.readouterr().out
    assert listing.count("\n") == 6 and "Prefixed" in listing and "10.0.0.9" in listing
    assert _acls(root_path, "list", "--topic", "orders") == 0
    assert capsys.readouterr().out.count("\n") == 3
    assert _acls(root_path, "list", "--topic", "logs-eu", "--resource-pattern-type", "match") == 0
    assert "Deny" in capsys.readouterr().out
    assert _acls(root_path, "remove", "--group", "g") == 0
    assert capsys.readouterr().out.count("Removed ACL") == 2
    assert _acls(root_path, "remove", "--topic", "logs-", "--resource-pattern-type", "prefixed") == 0
    assert len(stored_acls(StateRoot.open(root_path))) == 2


@pytest.mark.parametrize("args, message", [
    (["add", "--topic", "t"], "name a principal"),
    (["add", "--allow-principal", "User:a"], "name a resource"),
    (["add", "--allow-principal", "alice", "--topic", "t"], "Could not parse principal"),
    (["add", "--allow-principal", "User:a", "--operation", "Fly", "--topic", "t"], "unknown Operation 'Fly'"),
    (["add", "--allow-principal", "User:a", "--topic", "t", "--resource-pattern-type", "match"], "literal or prefixed"),
    (["add", "--allow-principal", "User:a", "--topic", ""], "resource name is empty"),
    (["add", "--allow-host", "h", "--topic", "t"], "--allow-host needs --allow-principal"),
    (["remove", "--allow-principal", "User:a"], "name a resource"),
    (["add", "--allow-principal", "User:a", "--topic", "t", "--resource-pattern-type", "suffixed"], "invalid choice"),
])
def test_bad_input_is_one_line_and_changes_nothing(root_path: Path, capsys: pytest.CaptureFixture[str],
                                                   args: list[str], message: str) -> None:
    version = DeltaRecordLog(StateRoot.open(root_path).log_path).version()
    assert _acls(root_path, *args) == 2
    error = capsys.readouterr().err
    assert message in error and error.count("\n") == 1 and error.startswith("groupcoord: error:")
    assert DeltaRecordLog(StateRoot.open(root_path).log_path).version() == version


@pytest.fixture
def holder(root_path: Path) -> Iterator[str]:
    """A SASL holder of the root with the authorizer on and admin a super user."""
    config = resolve_config(flags={"listener.security.protocol": "SASL_PLAINTEXT", "sasl.enabled.mechanisms": "PLAIN",
                                   "authorizer.enabled": True, "super.users": "User:admin"})
    with BackgroundCoordinator(StateRoot.open(root_path), config, listen="127.0.0.1:0") as coordinator:
        assert coordinator.address is not None
        yield coordinator.address


def test_a_live_holder_takes_acls_from_a_super_user_only(
        root_path: Path, holder: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def as_user(user: str, *args: str) -> int:
        monkeypatch.setenv("GROUPCOORD_SASL_PASSWORD", PASSWORDS[user])
        return _acls(root_path, *args, "--conf", "spark.groupcoord.listener.security.protocol=SASL_PLAINTEXT",
                     "--conf", "spark.groupcoord.sasl.mechanism=PLAIN", "--conf",
                     f"spark.groupcoord.sasl.username={user}")

    add = ("add", "--allow-principal", "User:bob", "--cluster", "--operation", "Describe")
    assert as_user("alice", *add) == 1
    error = capsys.readouterr().err
    assert "CLUSTER_AUTHORIZATION_FAILED" in error and error.count("\n") == 1
    assert as_user("admin", *add) == 0
    assert as_user("admin", "remove", "--cluster") == 0
    assert "Removed ACL Cluster:LITERAL:kafka-cluster" in capsys.readouterr().out
