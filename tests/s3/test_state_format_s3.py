"""A state root of release 0.1.0 (format 1, ``tests/fixtures/state_format1_full``) copied to S3 and opened there:
it is migrated in place to the current format and keeps every record, offset and topic."""

from __future__ import annotations

import json

import pytest

from groupcoord.log.delta import DeltaRecordLog
from groupcoord.state.schema import OFFSETS
from groupcoord.state.views import read_view
from groupcoord.state_root import STATE_FORMAT_VERSION, StateRoot
from groupcoord.storage import objects
from groupcoord.storage.location import parse_location
from groupcoord.storage.tables import open_table
from groupcoord.topics import TopicCatalog, TopicLog
from groupcoord.topics.log_table import TOPIC_LOG_SCHEMA
from tests.host.test_state_format import FULL_FIXTURE

pytestmark = pytest.mark.integration


def test_a_release_0_1_0_root_on_s3_migrates_and_keeps_every_record(s3_env: dict[str, str], s3_bucket: str) -> None:
    location = parse_location(f"s3://{s3_bucket}/old")
    for file in sorted(p for p in FULL_FIXTURE.rglob("*") if p.is_file()):
        objects.put(location, str(file.relative_to(FULL_FIXTURE)), file.read_bytes())

    root = StateRoot.open(location)

    assert root.format_version == STATE_FORMAT_VERSION
    assert json.loads(objects.read(location, "_groupcoord/format.json") or b"{}") == {"format": STATE_FORMAT_VERSION}
    for topic in ("orders", "clicks"):
        assert open_table(root.topic_path(topic)).schema().to_arrow().names == TOPIC_LOG_SCHEMA.names
    catalog = TopicCatalog(root)
    assert catalog.partition_counts() == {"orders": 2, "clicks": 1}
    assert TopicLog(root, "orders", catalog=catalog).end_offsets() == {0: 3, 1: 1}
    assert DeltaRecordLog(root.log_path).load().epoch == 1
    offsets = read_view(root, OFFSETS).to_pylist()
    assert {(r["group_id"], r["topic"], r["partition"]): r["offset"] for r in offsets} == {
        ("g1", "orders", 0): 2, ("g1", "orders", 1): 1, ("g2", "clicks", 0): 1}
