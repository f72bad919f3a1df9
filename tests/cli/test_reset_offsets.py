"""``groups reset-offsets``: every mode, clamping, dry run vs execute, CSV export and import, the ``--as-of`` undo,
and the refusal for a group with active members."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from groupcoord.admin.describe import committed_offsets
from groupcoord.sink.group import reset_markers
from groupcoord.state_root import StateRoot
from tests.cli.conftest import BASE_TIME, RECORDS, TOPIC, Cli, LiveGroup, commit, table_rows

pytestmark = pytest.mark.integration

GROUP = "billing"


@pytest.fixture
def billing(root: StateRoot) -> StateRoot:
    """Group ``billing`` with offsets 4, 10, 16 committed on partitions 0, 1, 2."""
    commit(root, GROUP, {(TOPIC, 0): 4, (TOPIC, 1): 10, (TOPIC, 2): 16})
    return root


def _plan(cli: Cli, *args: str) -> dict[int, int]:
    run = cli("groups", "reset-offsets", "--group", GROUP, *args)
    assert run.code == 0, run.err
    rows = table_rows(run.out)
    assert rows[0] == ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]
    return {int(r[2]): int(r[3]) for r in rows[1:]}


def test_each_mode_plans_clamped_offsets_and_a_dry_run_changes_nothing(billing: StateRoot, cli: Cli) -> None:
    topic = ("--topic", TOPIC)
    assert _plan(cli, *topic, "--to-earliest") == {0: 0, 1: 0, 2: 0}
    assert _plan(cli, *topic, "--to-latest") == {0: RECORDS, 1: RECORDS, 2: RECORDS}
    assert _plan(cli, *topic, "--to-offset", "99") == {0: RECORDS, 1: RECORDS, 2: RECORDS}  # clamped to log-end
    assert _plan(cli, "--topic", f"{TOPIC}:1,2", "--shift-by", "-12", "--dry-run") == {1: 0, 2: 4}  # log-start
    assert _plan(cli, "--all-topics", "--shift-by", "5") == {0: 9, 1: 15, 2: RECORDS}
    assert _plan(cli, *topic, "--to-current") == {0: 4, 1: 10, 2: 16}
    # Record i has timestamp BASE_TIME + i minutes; a time with a zone is converted to UTC.
    assert _plan(cli, *topic, "--to-datetime", "2024-05-01T12:07:30+02:00") == {0: 8, 1: 8, 2: 8}
    assert _plan(cli, *topic, "--to-datetime", (BASE_TIME + dt.timedelta(hours=5)).isoformat()) == {
        0: RECORDS, 1: RECORDS, 2: RECORDS}  # no record that late: the log-end, as Kafka
    assert _plan(cli, *topic, "--by-duration", "P1D") == {0: RECORDS, 1: RECORDS, 2: RECORDS}
    assert _plan(cli, *topic, "--by-duration", "P36500D") == {0: 0, 1: 0, 2: 0}
    assert committed_offsets(billing, GROUP) == {(TOPIC, 0): 4, (TOPIC, 1): 10, (TOPIC, 2): 16}


def test_export_then_from_file_round_trips_and_execute_commits(billing: StateRoot, cli: Cli, tmp_path: Path) -> None:
    export = cli("groups", "reset-offsets", "--group", GROUP, "--topic", f"{TOPIC}:0,2", "--to-offset", "7",
                 "--export")
    assert export.code == 0, export.err
    assert export.out == f"{TOPIC},0,7\n{TOPIC},2,7\n"
    plan = tmp_path / "plan.csv"
    plan.write_text(export.out + f"other-group,{TOPIC},1,3\n", encoding="utf-8")  # rows of other groups: ignored
    executed = cli("groups", "reset-offsets", "--group", GROUP, "--from-file", str(plan), "--execute")
    assert executed.code == 0, executed.err
    assert table_rows(executed.out)[1:] == [[GROUP, TOPIC, "0", "7"], [GROUP, TOPIC, "2", "7"]]
    assert committed_offsets(billing, GROUP) == {(TOPIC, 0): 7, (TOPIC, 1): 10, (TOPIC, 2): 7}
    # the reset marker the groupcoord-delta sink accepts a jump with (docs/compatibility.md)
    assert reset_markers(str(billing.path), GROUP) == {(TOPIC, 0): 7, (TOPIC, 2): 7}


def test_as_of_restores_the_offsets_before_a_bad_reset(billing: StateRoot, cli: Cli) -> None:
    from deltalake import DeltaTable

    good_version = DeltaTable(str(billing.state_table_path("offsets"))).version()
    bad = cli("groups", "reset-offsets", "--group", GROUP, "--all-topics", "--to-earliest", "--execute")
    assert bad.code == 0, bad.err
    assert committed_offsets(billing, GROUP) == {(TOPIC, 0): 0, (TOPIC, 1): 0, (TOPIC, 2): 0}
    assert _plan(cli, "--all-topics", "--as-of", str(good_version)) == {0: 4, 1: 10, 2: 16}
    undo = cli("groups", "reset-offsets", "--group", GROUP, "--all-topics", "--as-of", str(good_version),
               "--execute")
    assert undo.code == 0, undo.err
    assert committed_offsets(billing, GROUP) == {(TOPIC, 0): 4, (TOPIC, 1): 10, (TOPIC, 2): 16}
    before_anything = cli("groups", "reset-offsets", "--group", GROUP, "--all-topics", "--as-of",
                          "2000-01-01T00:00:00Z")
    assert before_anything.code == 0 and table_rows(before_anything.out) == [list(
        ("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"))]  # no offsets then: nothing to restore


def test_a_group_with_active_members_is_refused_with_kafkas_message(live_group: LiveGroup, cli: Cli) -> None:
    message = ("groupcoord: error: Assignments can only be reset if the group 'live' is inactive, but the current "
               "state is Stable.\n")
    for mode in ("--dry-run", "--execute"):
        run = cli("groups", "reset-offsets", "--group", "live", "--topic", TOPIC, "--to-earliest", mode)
        assert (run.code, run.out, run.err) == (1, "", message)
    assert committed_offsets(live_group.coordinator.root, "live") == {(TOPIC, p): 5 for p in range(3)}


@pytest.mark.parametrize(("args", "code", "message"), [
    (("--topic", "nope", "--to-earliest"), 1, "topic 'nope' does not exist"),
    (("--topic", f"{TOPIC}:7", "--to-earliest"), 1, f"partition 7 of topic '{TOPIC}' does not exist"),
    (("--topic", TOPIC, "--to-datetime", "yesterday"), 2, "malformed date-time 'yesterday'"),
    (("--topic", TOPIC, "--by-duration", "1 day"), 2, "malformed duration '1 day'"),
    (("--topic", TOPIC, "--as-of", "noon"), 2, "malformed date-time 'noon'"),
    (("--topic", TOPIC), 2, "one of the arguments --to-earliest"),
])
def test_bad_input_is_one_line_and_changes_nothing(billing: StateRoot, cli: Cli, args: tuple[str, ...], code: int,
                                                   message: str) -> None:
    run = cli("groups", "reset-offsets", "--group", GROUP, *args, "--execute")
    assert (run.code, run.out) == (code, "")
    assert run.err.startswith("groupcoord: error: ") and message in run.err and run.err.count("\n") == 1
    assert committed_offsets(billing, GROUP) == {(TOPIC, 0): 4, (TOPIC, 1): 10, (TOPIC, 2): 16}


@pytest.mark.parametrize(("content", "message"), [
    (f"{TOPIC},0\n", "line 1: expected TOPIC,PARTITION,OFFSET"),
    (f"{TOPIC},0,5\n{TOPIC},one,5\n", "line 2: partition and offset must be integers"),
    ("", "holds no offsets for group 'billing'"),
])
def test_a_malformed_csv_is_one_line_and_changes_nothing(billing: StateRoot, cli: Cli, tmp_path: Path, content: str,
                                                         message: str) -> None:
    plan = tmp_path / "bad.csv"
    plan.write_text(content, encoding="utf-8")
    run = cli("groups", "reset-offsets", "--group", GROUP, "--from-file", str(plan), "--execute")
    assert (run.code, run.out) == (1, "")
    assert run.err.startswith("groupcoord: error: ") and message in run.err and run.err.count("\n") == 1
    assert committed_offsets(billing, GROUP) == {(TOPIC, 0): 4, (TOPIC, 1): 10, (TOPIC, 2): 16}
