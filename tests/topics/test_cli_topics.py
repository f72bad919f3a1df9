"""``groupcoord topics``: every subcommand, and every bad input as one line, exit code 1 and no change on disk."""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from groupcoord.cli.main import main
from groupcoord.state_root import StateRoot
from groupcoord.topics import TopicCatalog, TopicLog, partition_for_key
from tests.narrowing import present

Unchanged = Callable[[Path], AbstractContextManager[None]]
Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state"


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], state: Path) -> Run:
    """Run ``groupcoord topics ARGS --state-root <state>`` in-process; return (exit code, stdout, stderr)."""

    def invoke(*args: str, stdin: bytes | None = None, monkeypatch: pytest.MonkeyPatch | None = None) -> tuple[
            int, str, str]:
        capsys.readouterr()
        if stdin is not None:
            assert monkeypatch is not None
            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
        code = main(["topics", *args, "--state-root", str(state)])
        out, err = capsys.readouterr()
        return code, out, err

    return invoke


def _one_error_line(err: str, message: str) -> None:
    lines = err.strip().splitlines()
    assert lines == [f"groupcoord: error: {message}"]


def test_create_makes_the_root_and_prints_created(run: Run, state: Path) -> None:
    assert not state.exists()
    assert run("create", "events", "--partitions", "3") == (0, "Created topic events.\n", "")
    assert TopicCatalog(StateRoot.open(state)).partition_counts() == {"events": 3}


def test_create_if_not_exists_keeps_the_existing_topic(run: Run, state: Path) -> None:
    run("create", "events", "--partitions", "3")
    code, out, _ = run("create", "events", "--partitions", "8", "--if-not-exists")
    assert (code, out) == (0, "Topic 'events' already exists with 3 partitions.\n")
    assert TopicCatalog(StateRoot.open(state)).describe("events").partitions == 3


def test_list_prints_one_name_per_line_sorted(run: Run) -> None:
    run("create", "b", "--partitions", "1")
    run("create", "a", "--partitions", "2")
    assert run("list") == (0, "a\nb\n", "")


def test_list_without_a_root_is_one_error_line(run: Run, state: Path) -> None:
    code, out, err = run("list")
    assert (code, out) == (1, "")
    _one_error_line(err, f"state root {state} does not exist")
    assert not state.exists()


def test_describe_shows_partitions_racks_and_offsets(run: Run, state: Path) -> None:
    run("create", "events", "--partitions", "2", "--racks", "rack-a,rack-b")
    run("create", "other", "--partitions", "1")
    code, out, _ = run("produce", "events", "--num-records", "10", "--partition", "1")
    assert code == 0
    code, out, err = run("describe", "events")
    info = TopicCatalog(StateRoot.open(state)).describe("events")
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        f"Topic: events\tTopicId: {info.topic_id}\tPartitionCount: 2\tRecords: 10",
        "\tTopic: events\tPartition: 0\tRack: rack-a\tLogStartOffset: 0\tLogEndOffset: 0",
        "\tTopic: events\tPartition: 1\tRack: rack-b\tLogStartOffset: 0\tLogEndOffset: 10",
    ]
    code, out, _ = run("describe")
    assert code == 0
    assert [line.split("\t")[0] for line in out.splitlines() if not line.startswith("\t")] == [
        "Topic: events", "Topic: other"]


def test_alter_grows_the_topic(run: Run, state: Path) -> None:
    run("create", "events", "--partitions", "2")
    assert run("alter", "events", "--partitions", "5") == (0, "Altered topic events: 5 partitions.\n", "")
    assert TopicCatalog(StateRoot.open(state)).describe("events").partitions == 5


def test_produce_from_stdin_keyed_and_keyless(run: Run, state: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run("create", "events", "--partitions", "4")
    code, out, err = run("produce", "events", stdin=b"user-1\thello\nno key here\nuser-2\tworld\r\n",
                         monkeypatch=monkeypatch)
    assert (code, out, err) == (0, "Produced 3 records to topic events.\n", "")
    log = TopicLog(StateRoot.open(state), "events")
    records = [r for p in range(4) for r in log.read_records(p, 0)]
    by_value = {r.value: r for r in records}
    assert by_value[b"hello"].key == b"user-1"
    assert by_value[b"hello"].partition == partition_for_key(b"user-1", 4)
    assert by_value[b"world"].partition == partition_for_key(b"user-2", 4)
    assert by_value[b"no key here"].key is None


def test_produce_generated_records_in_batches_with_progress(run: Run, state: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("groupcoord.cli.topics._PROGRESS_EVERY_S", 0.0)
    run("create", "events", "--partitions", "3")
    code, out, err = run("produce", "events", "--num-records", "1000", "--batch-records", "300")
    assert (code, out) == (0, "Produced 1000 records to topic events.\n")
    assert [line.split(" (")[0] for line in err.splitlines()] == [
        f"produced {n}/1000 records to events" for n in (300, 600, 900)]
    log = TopicLog(StateRoot.open(state), "events")
    assert sum(log.end_offsets().values()) == 1000
    assert sorted(present(r.key) for p in range(3) for r in log.read_records(p, 0, 1000)) == sorted(
        f"key-{i}".encode() for i in range(1000))


# --- bad input: one line, exit code 1, nothing changed ---------------------------------------------------------------

@pytest.mark.parametrize(("name", "message"), [
    ("bad name", "Topic name 'bad name' is illegal, it contains a character other than ASCII alphanumerics"),
    (".", "Topic name cannot be '.'."),
    ("..", "Topic name cannot be '..'."),
    ("x" * 250, "Topic name is illegal, it can't be longer than 249 characters, topic name has 250 characters."),
    ("a/b", "Topic name 'a/b' is illegal"),
])
def test_create_with_an_illegal_name_does_not_even_create_the_root(run: Run, state: Path, unchanged: Unchanged,
                                                                    name: str, message: str) -> None:
    with unchanged(state):
        code, out, err = run("create", name, "--partitions", "1")
    assert (code, out) == (1, "")
    assert err.startswith(f"groupcoord: error: {message}") and len(err.strip().splitlines()) == 1
    assert not state.exists()


def test_create_of_a_duplicate_is_refused_and_changes_nothing(run: Run, state: Path, unchanged: Unchanged) -> None:
    run("create", "events", "--partitions", "2")
    with unchanged(state):
        code, out, err = run("create", "events", "--partitions", "2")
    assert (code, out) == (1, "")
    _one_error_line(err, "Topic 'events' already exists.")


@pytest.mark.parametrize("partitions", ["0", "-1"])
def test_create_with_fewer_than_one_partition_is_refused(run: Run, state: Path, unchanged: Unchanged,
                                                        partitions: str) -> None:
    run("create", "existing", "--partitions", "1")
    with unchanged(state):
        code, out, err = run("create", "events", "--partitions", partitions)
    assert (code, out) == (1, "")
    _one_error_line(err, "Number of partitions must be larger than 0.")


@pytest.mark.parametrize(("partitions", "message"), [
    ("2", "Topic 'events' currently has 3 partitions, which is higher than the requested 2; partitions can only grow."),
    ("3", "Topic 'events' already has 3 partitions."),
    ("0", "Number of partitions must be larger than 0."),
])
def test_alter_that_does_not_grow_is_refused(run: Run, state: Path, unchanged: Unchanged, partitions: str,
                                             message: str) -> None:
    run("create", "events", "--partitions", "3")
    with unchanged(state):
        code, out, err = run("alter", "events", "--partitions", partitions)
    assert (code, out) == (1, "")
    _one_error_line(err, message)


@pytest.mark.parametrize("args", [("describe", "ghost"), ("alter", "ghost", "--partitions", "4"),
                                  ("produce", "ghost", "--num-records", "3")])
def test_unknown_topic_is_refused(run: Run, state: Path, unchanged: Unchanged, args: tuple[str, ...]) -> None:
    run("create", "events", "--partitions", "1")
    with unchanged(state):
        code, out, err = run(*args)
    assert (code, out) == (1, "")
    _one_error_line(err, "Topic 'ghost' does not exist.")


def test_produce_to_a_partition_outside_the_topic_is_refused(run: Run, state: Path, unchanged: Unchanged) -> None:
    run("create", "events", "--partitions", "2")
    with unchanged(state):
        code, _, err = run("produce", "events", "--num-records", "3", "--partition", "2")
    assert code == 1
    _one_error_line(err, "Partition 2 of topic 'events' does not exist (it has 2 partitions).")


def test_topics_without_a_subcommand_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["topics"]) == 2
    assert capsys.readouterr().err.strip() == (
        "groupcoord: error: topics: choose a subcommand: create, list, describe, alter, produce")


def test_the_installed_command_creates_and_refuses_a_duplicate(state: Path) -> None:
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "groupcoord", "topics", *args, "--state-root", str(state)],
                              capture_output=True, text=True, timeout=120)

    created = cli("create", "events", "--partitions", "2")
    assert (created.returncode, created.stdout) == (0, "Created topic events.\n")
    duplicate = cli("create", "events", "--partitions", "2")
    assert (duplicate.returncode, duplicate.stdout) == (1, "")
    assert duplicate.stderr == "groupcoord: error: Topic 'events' already exists.\n"
