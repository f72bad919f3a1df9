"""Loading a committed format-1 state root, and refusing a newer format."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from groupcoord.coordinator import CoordinatorConfig, GroupCoordinator
from groupcoord.coordinator.records import decode_record
from groupcoord.log.delta import DeltaRecordLog
from groupcoord.protocol.requests import OffsetFetchRequest
from groupcoord.protocol.responses import OffsetFetchResponse
from groupcoord.state_root import STATE_FORMAT_VERSION, StateRoot, StateRootError
from tests.narrowing import expect

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "state_format1"


@pytest.fixture
def format1_root(tmp_path: Path) -> Path:
    """A private copy of the committed fixture (loading must not depend on writing to it)."""
    copy = tmp_path / "root"
    shutil.copytree(FIXTURE, copy)
    return copy


def test_committed_format1_root_loads_with_its_offsets(format1_root: Path) -> None:
    root = StateRoot.open(format1_root)
    loaded = DeltaRecordLog(root.log_path).load()
    core = GroupCoordinator(CoordinatorConfig())
    for record in loaded.records:
        core.replay(decode_record(record))
    assert loaded.epoch == 1
    offsets = {}
    for group in ("g1", "g2"):
        result = core.handle(OffsetFetchRequest(group_id=group, topics=None), 1_700_000_001_000, 0)
        (( _, response),) = result.responses
        for topic in expect(response, OffsetFetchResponse).topics:
            for partition in topic.partitions:
                offsets[(group, topic.name, partition.partition)] = partition.offset
    assert offsets == {("g1", "orders", 0): 10, ("g1", "orders", 1): 20, ("g2", "clicks", 0): 5}


def test_a_newer_format_is_refused_with_a_clear_message(format1_root: Path) -> None:
    marker = format1_root / "_groupcoord" / "format.json"
    marker.write_text(json.dumps({"format": STATE_FORMAT_VERSION + 1}))
    with pytest.raises(StateRootError, match=r"has format 2, newer than this groupcoord supports \(1\)"):
        StateRoot.open(format1_root)
