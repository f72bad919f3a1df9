"""Tables with writers in several processes: two real processes race for one Delta version of each.

Each table is written through the project's own writer, and every such writer commits with a put-if-absent of the
next version: delta-rs's conditional commit (``max_commit_retries=0``, or app transactions for the sinks) or, for the
appends of the record log and the topic logs, groupcoord's own hard link (:mod:`groupcoord.storage.files`). Each
child process reads the table as its writer does, then waits at a barrier placed right before the commit (the
module's write function is wrapped, nothing else changes), so both commit the same version at the same moment.
Exactly one wins; the loser sees the conflict: a fenced append, a lost lease race, a sink commit that plans again
and finds its rows written, or a producer's retry that re-reads and renumbers.

delta-spark must not write these tables: its local-filesystem log store checks for the commit file and then renames,
which is safe only inside one JVM (``docs/state-tables.md``).
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.synchronize
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable
from kafka.structs import TopicPartition

from groupcoord.coordinator.encoded import EncodedRecord
from groupcoord.ingest.config import SINK_SCHEMA
from groupcoord.log.base import LogFencedError
from groupcoord.log.delta import DeltaRecordLog
from groupcoord.log.lease import LeaseTable
from groupcoord.sink.commit import append_batch, ensure_table
from groupcoord.sink.plan import BatchRange
from groupcoord.sink.table import SinkTable
from groupcoord.state_root import StateRoot
from groupcoord.topics import ProducerRecord, TopicCatalog, TopicLog

pytestmark = pytest.mark.integration

TOPIC = "orders"
BARRIER_TIMEOUT_S = 60.0


def _record(value: int) -> EncodedRecord:
    return EncodedRecord("offset_commit", "g/t/0", f'{{"offset": {value}}}'.encode())


def _append_to_record_log(root: StateRoot, me: int) -> object:
    try:
        return ("won", DeltaRecordLog(root.log_path).append([_record(me)], expected_version=0))
    except LogFencedError as exc:
        return ("fenced", str(exc))


def _take_lease(root: StateRoot, me: int) -> object:
    held = LeaseTable(root.lease_path).try_acquire(f"holder-{me}", f"127.0.0.1:{9000 + me}")
    return ("lost", None) if held is None else ("won", held.info.version)


def _produce(root: StateRoot, me: int) -> object:
    result = TopicLog(root, TOPIC).produce(ProducerRecord(f"from-{me}".encode(), partition=0) for _ in range(3))
    return ("won" if result.attempts == 1 else "retried", result.version, [o for _, o in result.assigned])


def _append_to_sink(root: StateRoot, me: int) -> object:
    records = TopicLog(root, TOPIC).read(0, 0, 2)
    rows = records.append_column("topic", pa.array([TOPIC] * records.num_rows, pa.string()))
    done = append_batch(str(root.path / "sink"), "ingest", {(TOPIC, 0): BatchRange(0, 2)}, rows.to_batches(),
                        resets=dict)
    return ("won" if done.attempts == 1 else "planned again", done.rows)


def _create_topic(root: StateRoot, me: int) -> object:
    TopicCatalog(root).create(f"created-by-{me}", 1)
    return ("done", me)


WRITERS: dict[str, tuple[str, Callable[[StateRoot, int], object]]] = {
    "record log": ("groupcoord.storage.files._put_if_absent", _append_to_record_log),
    "lease": ("groupcoord.log.lease.write_deltalake", _take_lease),
    "topic log": ("groupcoord.topics.topic_log.append_file", _produce),
    "ingestion sink": ("groupcoord.sink.commit.offsets_commit", _append_to_sink),
    "topic catalog": ("groupcoord.topics.catalog.write_deltalake", _create_topic),
}
"""Per table: the function each writer commits through (where the barrier goes) and one write of the table."""


def _race_child(table: str, root_path: str, me: int, barrier: multiprocessing.synchronize.Barrier,
                results: Any) -> None:
    """One racing process: wrap the commit function with the barrier, write once, report the outcome."""
    import importlib

    target, write = WRITERS[table]
    module_name, _, attribute = target.rpartition(".")
    module = importlib.import_module(module_name)
    real = getattr(module, attribute)
    waited: list[bool] = []

    def at_the_barrier(*args: Any, **kwargs: Any) -> Any:
        if not waited:  # only the first commit races; a writer's own retry runs alone
            waited.append(True)
            barrier.wait(BARRIER_TIMEOUT_S)
        return real(*args, **kwargs)

    setattr(module, attribute, at_the_barrier)
    try:
        results.put((me, write(StateRoot.open(root_path), me)))
    except Exception as exc:  # reported to the test, which shows it
        results.put((me, ("error", f"{type(exc).__name__}: {exc}")))


def _race(table: str, root: StateRoot) -> dict[int, Any]:
    """Run two racing processes for ``table``; their outcomes by process number."""
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(2)
    results = context.Queue()
    processes = [context.Process(target=_race_child, args=(table, str(root.path), me, barrier, results))
                 for me in (1, 2)]
    for process in processes:
        process.start()
    outcomes = dict(results.get(timeout=120) for _ in processes)
    for process in processes:
        process.join(30)
        assert process.exitcode == 0, f"{table}: racer exited with {process.exitcode}"
    return outcomes


@pytest.fixture
def root(tmp_path: Path) -> StateRoot:
    """A state root where every raced table exists at version 0 (the lease released, so it is free to take)."""
    state = StateRoot.open(tmp_path / "root", create=True)
    TopicCatalog(state).create(TOPIC, 1)
    TopicLog(state, TOPIC).produce(ProducerRecord(b"first", partition=0) for _ in range(2))
    DeltaRecordLog(state.log_path).append([_record(0)], expected_version=-1)
    lease = LeaseTable(state.lease_path)
    held = lease.try_acquire("holder-0", "127.0.0.1:9000")
    assert held is not None
    lease.release(held)
    return state


def _version(path: Path) -> int:
    return DeltaTable(str(path)).version()


def test_two_processes_appending_the_same_record_log_version_one_is_fenced(root: StateRoot) -> None:
    outcomes = _race("record log", root)
    assert sorted(o[0] for o in outcomes.values()) == ["fenced", "won"], outcomes
    assert [o[1] for o in outcomes.values() if o[0] == "won"] == [1]
    assert any("already exists: another writer committed first" in o[1] for o in outcomes.values()
               if o[0] == "fenced"), outcomes
    assert _version(root.log_path.local_path) == 1 and DeltaRecordLog(root.log_path).load().version == 1


def test_two_processes_taking_a_free_lease_one_holds_it(root: StateRoot) -> None:
    before = _version(root.lease_path.local_path)
    outcomes = _race("lease", root)
    assert sorted(o[0] for o in outcomes.values()) == ["lost", "won"], outcomes
    current = LeaseTable(root.lease_path).read_current()
    assert current is not None and current.live and current.version == before + 1
    [winner] = [me for me, o in outcomes.items() if o[0] == "won"]
    assert current.holder == f"holder-{winner}"


def test_two_producers_racing_for_one_version_one_wins_the_other_renumbers(root: StateRoot) -> None:
    before = _version(root.topic_path(TOPIC).local_path)
    outcomes = _race("topic log", root)
    assert sorted(o[0] for o in outcomes.values()) == ["retried", "won"], outcomes
    by_kind = {o[0]: o for o in outcomes.values()}
    assert by_kind["won"][1] == before + 1 and by_kind["won"][2] == [2, 3, 4]
    assert by_kind["retried"][1] == before + 2 and by_kind["retried"][2] == [5, 6, 7]
    assert TopicLog(root, TOPIC).read(0, 0).column("offset").to_pylist() == list(range(8))


def test_two_ingestion_members_appending_one_partition_one_writes_the_other_plans_again(root: StateRoot) -> None:
    ensure_table(str(root.path / "sink"), SINK_SCHEMA)  # created beforehand, as a running job's sink is
    outcomes = _race("ingestion sink", root)
    assert sorted(outcomes.values()) == [("planned again", 0), ("won", 2)], outcomes
    sink = SinkTable(root.path / "sink", "ingest")
    assert sink.read_all().column("offset").to_pylist() == [0, 1]
    assert sink.versions([TopicPartition(TOPIC, 0)]) == {TopicPartition(TOPIC, 0): 2}


def test_two_processes_creating_topics_at_once_both_land(root: StateRoot) -> None:
    before = _version(root.catalog_path.local_path)
    outcomes = _race("topic catalog", root)
    assert sorted(o[0] for o in outcomes.values()) == ["done", "done"], outcomes
    # the loser re-read the winner's catalog and committed after it
    assert _version(root.catalog_path.local_path) == before + 2
    assert {t.name for t in TopicCatalog(root).list()} == {TOPIC, "created-by-1", "created-by-2"}
