"""``groups delete``, ``groups delete-offsets`` and ``coordinator status``: writes go to the lease holder (or this
process takes the lease for them); status exits 3 without a holder."""

from __future__ import annotations

import time

import pytest

from groupcoord.admin.describe import committed_offsets, list_groups
from groupcoord.log.lease import current_holder
from groupcoord.state_root import StateRoot
from tests.cli.conftest import TOPIC, Cli, LiveGroup, commit, table_rows
from tests.narrowing import present

pytestmark = pytest.mark.integration


def test_delete_an_inactive_group_without_a_coordinator(root: StateRoot, cli: Cli) -> None:
    commit(root, "old", {(TOPIC, 0): 3})
    run = cli("groups", "delete", "--group", "old")
    assert run.code == 0, run.err
    assert run.out == "Deletion of requested consumer groups ('old') was successful.\n"
    assert committed_offsets(root, "old") == {}
    assert "old" not in [g.group_id for g in list_groups(root)]
    lease = current_holder(root)
    assert lease is not None and lease.released  # the lease taken for the write was given back


def test_delete_and_delete_offsets_of_an_active_group_are_refused(live_group: LiveGroup, cli: Cli) -> None:
    root = live_group.coordinator.root
    delete = cli("groups", "delete", "--group", "live")
    assert (delete.code, delete.out) == (1, "")
    assert delete.err == ("groupcoord: error: group 'live' could not be deleted: NON_EMPTY_GROUP (The group still "
                          "has members.)\n")
    subscribed = cli("groups", "delete-offsets", "--group", "live", "--topic", TOPIC)
    assert subscribed.code == 1
    assert subscribed.err == f"groupcoord: error: 3 of 3 partition offsets of topic '{TOPIC}' were not deleted\n"
    assert table_rows(subscribed.out)[-1] == [TOPIC, "2", "Error:", "GROUP_SUBSCRIBED_TO_TOPIC"]
    assert committed_offsets(root, "live") == {(TOPIC, p): 5 for p in range(3)}


def test_delete_offsets_of_one_topic_through_the_live_holder(live_group: LiveGroup, cli: Cli) -> None:
    root = live_group.coordinator.root
    commit_to = "archive"
    commit_admin = cli("groups", "reset-offsets", "--group", commit_to, "--topic", TOPIC, "--to-offset", "2",
                       "--execute")
    assert commit_admin.code == 0, commit_admin.err
    deadline = time.monotonic() + 10
    while committed_offsets(root, commit_to) != {(TOPIC, p): 2 for p in range(3)}:  # materialized every 250 ms
        assert time.monotonic() < deadline, "the reset did not reach the Delta state"
        time.sleep(0.05)
    epoch_before = current_holder(root)
    run = cli("groups", "delete-offsets", "--group", commit_to, "--topic", TOPIC)
    assert run.code == 0, run.err
    assert table_rows(run.out)[1:] == [["TOPIC", "PARTITION", "STATUS"]] + [
        [TOPIC, str(p), "Successful"] for p in range(3)]
    while committed_offsets(root, commit_to):
        assert time.monotonic() < deadline, "the deletion did not reach the Delta state"
        time.sleep(0.05)
    holder = current_holder(root)
    assert holder is not None and epoch_before is not None
    assert holder.live and holder.epoch == epoch_before.epoch  # the running coordinator served it: no takeover


@pytest.mark.parametrize("command", ["delete", "delete-offsets"])
def test_unknown_group_or_topic_is_one_line_without_taking_the_lease(root: StateRoot, cli: Cli, command: str) -> None:
    extra = ("--topic", TOPIC) if command == "delete-offsets" else ()
    run = cli("groups", command, "--group", "ghost", *extra)
    assert (run.code, run.out, run.err) == (1, "", "groupcoord: error: Consumer group 'ghost' does not exist.\n")
    commit(root, "known", {(TOPIC, 1): 1})
    if command == "delete-offsets":
        unknown = cli("groups", command, "--group", "known", "--topic", "nope")
        assert (unknown.code, unknown.err) == (1, "groupcoord: error: topic 'nope' does not exist\n")
    assert present(current_holder(root)).epoch == 1


def test_coordinator_status_exits_3_without_a_holder_and_0_with_one(root: StateRoot, cli: Cli,
                                                                    live_group: LiveGroup) -> None:
    live = cli("coordinator", "status")
    assert live.code == 0, live.err
    fields = dict(line.split(":", 1) for line in live.out.splitlines())
    assert fields["Address"].strip() == live_group.coordinator.address
    assert fields["Epoch"].strip() == "1" and fields["Lease"].strip() == "live"
    assert int(fields["Log version"]) >= 1
    assert "Expiry" in fields and "Holder" in fields
    live_group.consumer.close()
    live_group.coordinator.stop()
    released = cli("coordinator", "status")
    assert released.code == 3
    assert "Lease:       released" in released.out


def test_coordinator_status_of_a_fresh_root(root: StateRoot, cli: Cli) -> None:
    run = cli("coordinator", "status")
    assert run.code == 3
    assert "Holder:      none (the lease was never taken)" in run.out
    assert "Log version: none (no log yet)" in run.out
