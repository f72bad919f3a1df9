"""The record-log contract, run against both the in-memory log and the Delta log."""

from __future__ import annotations

import pytest

from groupcoord.coordinator.encoded import EncodedRecord
from groupcoord.log.base import LogFencedError
from tests.log.storage_helpers import LogFactory, offset


def test_empty_log_has_version_minus_one_and_loads_nothing(log_factory: LogFactory) -> None:
    log = log_factory()
    assert log.version() == -1
    loaded = log.load()
    assert (loaded.records, loaded.version, loaded.epoch) == ((), -1, 0)


def test_appends_return_increasing_versions_and_load_replays_them_in_order(log_factory: LogFactory) -> None:
    log = log_factory()
    first = log.append([offset("g", 0, 1), offset("g", 1, 5)], expected_version=-1)
    tombstone = EncodedRecord("offset_commit", "g/t/1", None, format_version=2)
    second = log.append([offset("g", 0, 2), tombstone], expected_version=first)
    assert second > first >= 0
    loaded = log_factory().load()
    assert loaded.version == second == log.version()
    assert loaded.records == (offset("g", 0, 1), offset("g", 1, 5), offset("g", 0, 2), tombstone)
    assert loaded.tail_records == 4


def test_append_at_a_stale_version_is_fenced_and_writes_nothing(log_factory: LogFactory) -> None:
    writer, rival = log_factory(), log_factory()
    version = writer.append([offset("g", 0, 1)], expected_version=-1)
    rival.append([offset("g", 0, 2)], expected_version=version)
    with pytest.raises(LogFencedError):
        writer.append([offset("g", 0, 3)], expected_version=version)
    assert [r.value for r in log_factory().load().records] == [b'{"offset": 1}', b'{"offset": 2}']


def test_second_creator_of_an_empty_log_is_fenced(log_factory: LogFactory) -> None:
    first, second = log_factory(), log_factory()
    first.append([offset("a", 0, 1)], expected_version=-1)
    with pytest.raises(LogFencedError):
        second.append([offset("b", 0, 1)], expected_version=-1)
    assert log_factory().load().records == (offset("a", 0, 1),)


def test_takeover_fences_the_deposed_writer_and_hides_its_marker(log_factory: LogFactory) -> None:
    old = log_factory()
    version = old.takeover(1, expected_version=-1)
    version = old.append([offset("g", 0, 1)], expected_version=version)
    new = log_factory()
    loaded = new.load()
    assert loaded.epoch == 1
    assert loaded.records == (offset("g", 0, 1),)
    taken = new.takeover(2, expected_version=loaded.version)
    with pytest.raises(LogFencedError):
        old.append([offset("g", 0, 99)], expected_version=version)
    new.append([offset("g", 0, 2)], expected_version=taken)
    reloaded = log_factory().load()
    assert reloaded.epoch == 2
    assert reloaded.records == (offset("g", 0, 1), offset("g", 0, 2))


def test_takeover_with_an_epoch_not_above_the_loaded_one_is_refused(log_factory: LogFactory) -> None:
    log_factory().takeover(3, expected_version=-1)
    stale = log_factory()
    loaded = stale.load()
    with pytest.raises(LogFencedError, match="not newer"):
        stale.takeover(3, expected_version=loaded.version)
    assert log_factory().version() == loaded.version


def test_load_returns_the_latest_snapshot_and_the_tail_after_it(log_factory: LogFactory) -> None:
    log = log_factory()
    version = log.append([offset("g", p, 1) for p in range(3)], expected_version=-1)
    version = log.append([offset("g", 0, 2)], expected_version=version)
    version = log.write_snapshot([offset("g", 0, 2), offset("g", 1, 1)], expected_version=version)
    version = log.append([offset("g", 1, 7)], expected_version=version)
    version = log.write_snapshot([offset("g", 0, 2), offset("g", 1, 7)], expected_version=version)
    version = log.append([offset("g", 2, 9), offset("g", 0, 3)], expected_version=version)
    loaded = log_factory().load()
    assert loaded.version == version
    assert loaded.records == (offset("g", 0, 2), offset("g", 1, 7), offset("g", 2, 9), offset("g", 0, 3))
    assert loaded.tail_records == 2


def test_a_snapshot_with_a_tail_loads_as_the_snapshot_then_the_tail(log_factory: LogFactory) -> None:
    log = log_factory()
    version = log.append([offset("g", p, 1) for p in range(3)], expected_version=-1)
    version = log.write_snapshot([offset("g", p, 1) for p in range(3)], expected_version=version,
                                 tail=[offset("g", 0, 5), offset("g", 3, 5)])
    version = log.append([offset("g", 1, 6)], expected_version=version)
    loaded = log_factory().load()
    assert loaded.version == version
    assert loaded.records == (offset("g", 0, 1), offset("g", 1, 1), offset("g", 2, 1), offset("g", 0, 5),
                              offset("g", 3, 5), offset("g", 1, 6))
    assert loaded.tail_records == 3


def test_batch_ids_after_names_the_batches_committed_since_a_version(log_factory: LogFactory) -> None:
    log = log_factory()
    v0 = log.append([offset("g", 0, 1)], expected_version=-1, batch_id="b-0")
    v1 = log.append([offset("g", 0, 2)], expected_version=v0)
    v2 = log.write_snapshot([offset("g", 0, 2)], expected_version=v1, batch_id="b-2")
    assert log_factory().batch_ids_after(v0) == {v1: None, v2: "b-2"}
    assert log_factory().batch_ids_after(v2) == {}
