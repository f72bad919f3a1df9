"""A snapshot's data file written ahead of its commit slot (:meth:`DeltaRecordLog.prepare` with the expected
version), committed with the writes folded behind it; and ignored, as garbage, when the guess was wrong."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from groupcoord.log.batcher import BatcherConfig, CommitBatcher, CommitTiming
from groupcoord.log.delta import DeltaRecordLog
from groupcoord.storage.files import commit_path
from tests.log.storage_helpers import offset


def _adds(path: Path, version: int) -> list[dict[str, object]]:
    lines = commit_path(path, version).read_text().splitlines()
    return [json.loads(line)["add"] for line in lines if '"add"' in line]


def test_the_snapshot_file_is_written_ahead_and_committed_with_the_writes_behind_it(tmp_path: Path) -> None:
    log = DeltaRecordLog(tmp_path / "log")
    state = [offset("g", n, 10 + n) for n in range(6)]
    timings: list[CommitTiming] = []

    async def main() -> tuple[int, int, int]:
        version = await asyncio.to_thread(log.takeover, 1, expected_version=-1)
        batcher = CommitBatcher(log, version=version, config=BatcherConfig(linger_ms=1, min_commit_interval_ms=0),
                                on_commit=timings.append)
        first = await batcher.append([offset("g", 0, 1)])
        snapshot = asyncio.ensure_future(batcher.snapshot(state))
        behind = asyncio.ensure_future(batcher.append([offset("g", 0, 20), offset("g", 9, 9)]))
        versions = await asyncio.gather(snapshot, behind)
        await batcher.close()
        return first, versions[0], versions[1]

    first, snapshot_version, behind_version = asyncio.run(main())
    log.close()
    assert snapshot_version == behind_version == first + 1  # one commit: the snapshot, then the writes behind it
    adds = _adds(tmp_path / "log", snapshot_version)
    assert [json.loads(str(a["stats"]))["numRecords"] for a in adds] == [6, 2]  # written ahead, then the tail
    assert all(a["partitionValues"] == {"segment": str(snapshot_version)} for a in adds)
    assert timings[-1].kind == "snapshot" and timings[-1].version == snapshot_version
    loaded = DeltaRecordLog(tmp_path / "log").load()
    assert loaded.tail_records == 2
    assert {r.key: r.value for r in loaded.records} == {
        **{r.key: r.value for r in state}, offset("g", 0, 20).key: offset("g", 0, 20).value,
        offset("g", 9, 9).key: offset("g", 9, 9).value}
    assert [r.value for r in loaded.records if r.key == offset("g", 0, 0).key] == [
        offset("g", 0, 10).value, offset("g", 0, 20).value]  # snapshot rows first, in seq order


def test_a_file_written_ahead_for_another_version_is_not_committed(tmp_path: Path) -> None:
    log = DeltaRecordLog(tmp_path / "log")
    version = log.takeover(1, expected_version=-1)
    version = log.append([offset("g", 0, 1)], expected_version=version)
    state = [offset("g", n, 10 + n) for n in range(3)]
    prepared = log.prepare(state, version=version + 5)  # a wrong guess: an exclusive action came first
    committed = log.write_snapshot(prepared, expected_version=version, tail=[offset("g", 1, 30)])
    adds = _adds(tmp_path / "log", committed)
    assert len(adds) == 1 and json.loads(str(adds[0]["stats"]))["numRecords"] == 4
    assert (tmp_path / "log" / f"segment={version + 5}").is_dir()  # the orphan, garbage for collection later
    loaded = DeltaRecordLog(tmp_path / "log").load()
    assert loaded.version == committed and loaded.tail_records == 1
    assert {r.key: r.value for r in loaded.records} == {
        offset("g", 0, 10).key: offset("g", 0, 10).value, offset("g", 1, 30).key: offset("g", 1, 30).value,
        offset("g", 2, 12).key: offset("g", 2, 12).value}
