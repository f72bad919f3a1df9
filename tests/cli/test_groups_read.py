"""``groups list`` and ``groups describe``: read from the Delta state, Kafka's headers, ``-`` for missing values."""

from __future__ import annotations

import subprocess
import sys

import pytest

from groupcoord.state_root import StateRoot
from tests.cli.conftest import PARTITIONS, RECORDS, TOPIC, Cli, LiveGroup, commit, table_rows

pytestmark = pytest.mark.integration


def test_describe_offsets_of_an_inactive_group_shows_lag_and_dashes(root: StateRoot, cli: Cli) -> None:
    commit(root, "billing", {(TOPIC, 0): 4, (TOPIC, 1): 20})
    run = cli("groups", "describe", "--group", "billing")
    assert run.code == 0, run.err
    assert run.out.startswith("Consumer group 'billing' has no active members.")
    rows = table_rows(run.out)[1:]
    assert rows[0] == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID",
                       "HOST", "CLIENT-ID"]
    assert rows[1:] == [
        ["billing", TOPIC, "0", "4", str(RECORDS), str(RECORDS - 4), "-", "-", "-"],
        ["billing", TOPIC, "1", "20", str(RECORDS), "0", "-", "-", "-"],
    ]
    verbose = table_rows(cli("groups", "describe", "--group", "billing", "--offsets", "--verbose").out)[1:]
    assert verbose[0][3] == "LEADER-EPOCH" and verbose[0][-1] == "COMMIT-TIME"
    assert verbose[1][3] == "-" and verbose[1][4] == "4"


def test_list_and_describe_a_live_group(root: StateRoot, cli: Cli, live_group: LiveGroup) -> None:
    commit_via_delta_only = "billing"  # a group that only made simple commits has no generation: Empty
    live_group.consumer.poll(timeout_ms=10)
    with_state = cli("groups", "list", "--state")
    assert with_state.code == 0, with_state.err
    assert table_rows(with_state.out) == [["GROUP", "STATE"], ["live", "Stable"]]
    assert cli("groups", "list").out.split() == ["live"]
    assert table_rows(cli("groups", "list", "--state", "empty").out) == [["GROUP", "STATE"]]
    assert commit_via_delta_only not in cli("groups", "list").out

    members = table_rows(cli("groups", "describe", "--group", "live", "--members", "--verbose").out)
    assert members[0] == ["GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
                          "ASSIGNMENT"]
    (member,) = members[1:]
    assert member[0] == "live" and member[1].startswith("cli-test-client") and member[2] == "-"
    assert member[4] == "cli-test-client" and member[5] == str(PARTITIONS)
    assert member[6] == f"{TOPIC}(0,1,2)"

    offsets = table_rows(cli("groups", "describe", "--group", "live").out)
    assert offsets[0][0] == "GROUP"  # an active group gets no "no active members" note
    assert [(r[2], r[3], r[5], r[6]) for r in offsets[1:]] == [
        (str(p), "5", str(RECORDS - 5), member[1]) for p in range(PARTITIONS)]

    state = cli("groups", "describe", "--group", "live", "--state", "--verbose")
    header, row = state.out.splitlines()
    assert header.split() == ["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS",
                              "GENERATION"]
    assert row.split()[0] == "live" and row.split()[1] == live_group.coordinator.address
    assert row.split()[2] == "(1)"  # the lease epoch
    assert row.split()[3:6] == ["range", "Stable", "1"] and int(row.split()[6]) >= 1


def test_describe_of_an_unknown_group_is_one_line_and_exit_1(root: StateRoot, cli: Cli) -> None:
    run = cli("groups", "describe", "--group", "nobody", "--members")
    assert (run.code, run.out) == (1, "")
    assert run.err == "groupcoord: error: Consumer group 'nobody' does not exist.\n"


def test_a_missing_state_root_is_one_line_and_exit_1(tmp_path: object, cli: Cli) -> None:
    run = cli("groups", "list", "--state-root", f"{tmp_path}/nowhere")
    assert run.code == 1
    assert run.err.startswith("groupcoord: error: state root ") and run.err.count("\n") == 1
    assert "Traceback" not in run.err


def test_describe_in_a_real_subprocess(root: StateRoot) -> None:
    commit(root, "billing", {(TOPIC, 2): 7})
    done = subprocess.run([sys.executable, "-m", "groupcoord", "groups", "describe", "--group", "billing",
                           "--state-root", str(root.path)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert table_rows(done.stdout)[-1] == ["billing", TOPIC, "2", "7", str(RECORDS), str(RECORDS - 7), "-", "-", "-"]
    missing = subprocess.run([sys.executable, "-m", "groupcoord", "groups", "describe", "--group", "x"],
                             capture_output=True, text=True, timeout=120, check=False,
                             env={"PATH": "/usr/bin:/bin"})
    assert missing.returncode == 2
    assert missing.stderr.startswith("groupcoord: error: no state root")
