"""The broker's class-data-sharing archive: dumped by a broker when missing, mapped when present, published by a
rename once the dumping JVM has exited, with outdated and abandoned archives dropped."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from groupcoord.devbroker.class_archive import ClassArchive, class_archive


def test_a_missing_archive_is_dumped_and_a_present_one_is_mapped(tmp_path: Path) -> None:
    archive = ClassArchive(tmp_path / "abc.jsa", tmp_path / "abc.1.dump.jsa")
    assert archive.broker_options() == [f"-XX:ArchiveClassesAtExit={tmp_path / 'abc.1.dump.jsa'}"]
    assert archive.tool_options() == []  # a tool never dumps
    archive.path.write_bytes(b"archive")
    assert archive.broker_options() == archive.tool_options() == [f"-XX:SharedArchiveFile={archive.path}"]


def test_publish_moves_the_dump_into_place_and_drops_outdated_and_abandoned_files(tmp_path: Path) -> None:
    archive = ClassArchive(tmp_path / "abc.jsa", tmp_path / "abc.1.dump.jsa")
    archive.publish()  # nothing dumped (the broker was killed): nothing happens
    assert list(tmp_path.iterdir()) == []

    archive.dump_path.write_bytes(b"new")
    (tmp_path / "old.jsa").write_bytes(b"another JVM or jar set")
    running = tmp_path / "abc.2.dump.jsa"  # another broker of this jar set, still dumping
    running.write_bytes(b"")
    abandoned = tmp_path / "abc.3.dump.jsa"
    abandoned.write_bytes(b"")
    two_hours_ago = time.time() - 7200
    os.utime(abandoned, (two_hours_ago, two_hours_ago))

    archive.publish()
    assert archive.path.read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["abc.2.dump.jsa", "abc.jsa"]


def test_the_archive_of_this_jvm_and_jar_set_has_a_stable_name_and_a_dump_path_per_broker() -> None:
    first, second = class_archive("/usr/bin/java"), class_archive("/usr/bin/java")
    if first is None or second is None:
        pytest.skip("the jars' folder is read-only here: brokers start without an archive")
    assert first.path == second.path and first.dump_path != second.dump_path
    assert first.path.parent.name == "kafka-cds"
