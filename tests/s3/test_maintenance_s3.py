"""Maintenance on S3: the record log's superseded segments dropped and the kept ones compacted, garbage beyond the
retention deleted from the bucket, and a topic log compacted, each load and read unchanged."""

from __future__ import annotations

import datetime as dt

import pytest
from pyarrow.fs import FileSelector

from groupcoord.log.delta import DeltaRecordLog
from groupcoord.log.maintenance import collect_garbage, run_log_maintenance
from groupcoord.state_root import StateRoot
from groupcoord.storage.maintenance import WRITE_GUARD
from groupcoord.storage.tables import open_table, table_filesystem
from groupcoord.topics import TopicCatalog, TopicLog
from groupcoord.topics.maintenance import maintain_topic_logs
from groupcoord.topics.topic_log import ProducerRecord
from tests.log.test_maintenance import _history

pytestmark = pytest.mark.integration


@pytest.fixture
def root(s3_env: dict[str, str], s3_bucket: str) -> StateRoot:
    """A new state root on the S3 server."""
    return StateRoot.open(f"s3://{s3_bucket}/root", create=True)


def _data_objects(root: StateRoot, table: str) -> list[str]:
    """The data files of ``table`` in the bucket (not the Delta log's checkpoints)."""
    fs = table_filesystem(root.location / table)
    return sorted(info.path for info in fs.get_file_info(FileSelector("", recursive=True))
                  if info.path.endswith(".parquet") and not info.path.startswith("_delta_log/"))


def test_record_log_maintenance_on_s3_drops_compacts_and_collects_garbage(root: StateRoot) -> None:
    log = DeltaRecordLog(root.log_path, retention_minutes=1)
    version = _history(log)
    before = DeltaRecordLog(root.log_path).load()
    files_before = len(_data_objects(root, "log"))

    report = run_log_maintenance(log, version)
    assert report.dropped == (-1,) and report.compacted_files == 5 + 3
    after = DeltaRecordLog(root.log_path).load()
    assert (after.records, after.tail_records) == (before.records, before.tail_records)

    later = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=1) + WRITE_GUARD + dt.timedelta(seconds=5)
    assert collect_garbage(log, now=later) == files_before
    assert len(_data_objects(root, "log")) == 2
    assert log.append([], expected_version=report.version) == report.version + 1


def test_topic_log_maintenance_on_s3_compacts_each_partition(root: StateRoot) -> None:
    TopicCatalog(root).create("events", 2)
    log = TopicLog(root, "events")
    for n in range(4):
        log.produce([ProducerRecord(f"{n}".encode(), partition=n % 2), ProducerRecord(b"x", partition=0)])
    rows_before = open_table(root.topic_path("events")).to_pyarrow_table().sort_by("offset")

    (report,) = maintain_topic_logs(root, retention_hours=1)
    assert report.compacted_files == 4 + 2 and report.added_files == 2
    live = open_table(root.topic_path("events")).to_pyarrow_table()
    assert live.num_rows == rows_before.num_rows
    assert log.produce([ProducerRecord(b"after", partition=1)]).assigned == ((1, 2),)
