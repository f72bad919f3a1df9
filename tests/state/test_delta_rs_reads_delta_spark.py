"""The other direction: delta-rs (groupcoord's reader and writer) reads a table that delta-spark wrote and checkpointed.

The committed fixture ``tests/fixtures/delta_spark_table/`` was made by ``tests/fixtures/make_delta_spark_table.py``:
seven delta-spark commits (creation, appends, DELETE, UPDATE, a ``replaceWhere`` overwrite) with checkpoints at
versions 3 and 6. delta-rs's rows must be delta-spark's rows, at the latest version and in time travel, also when
the log entries before a checkpoint are gone (as after Delta's log clean-up), so that delta-rs must start from
delta-spark's checkpoint Parquet.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from chispa import assert_df_equality
from deltalake import DeltaTable

from groupcoord.storage.tables import table_dataset

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "delta_spark_table"


@pytest.fixture
def table(tmp_path: Path) -> Path:
    """A copy of the fixture (a test may remove log entries from it)."""
    return Path(shutil.copytree(FIXTURE, tmp_path / "delta_spark_table"))


def assert_delta_rs_reads_as_delta_spark(spark: SparkSession, path: Path, version: int, *, spark_path: Path) -> None:
    """delta-rs's rows of ``path`` at ``version`` are delta-spark's rows of ``spark_path`` at that version."""
    expected = spark.read.format("delta").option("versionAsOf", version).load(str(spark_path))
    rows = table_dataset(DeltaTable(str(path), version=version)).to_table().select(expected.columns)
    assert rows.num_rows > 0
    assert_df_equality(spark.createDataFrame(rows), expected, ignore_row_order=True, ignore_nullable=True)


def test_the_fixture_was_written_and_checkpointed_by_delta_spark(table: Path) -> None:
    log = table / "_delta_log"
    assert sorted(p.name for p in log.glob("*.checkpoint.parquet")) == [
        f"{v:020d}.checkpoint.parquet" for v in (3, 6)]
    assert json.loads((log / "_last_checkpoint").read_text())["version"] == 6
    delta = DeltaTable(str(table))
    assert delta.version() == 6
    assert all("Delta-Lake/" in entry["engineInfo"] for entry in delta.history())
    assert (delta.protocol().min_reader_version, delta.protocol().min_writer_version) == (1, 2)
    assert delta.metadata().partition_columns == ["part"]
    assert not delta.schema().fields[0].nullable  # delta-spark's NOT NULL column, as delta-rs sees it


@pytest.mark.parametrize("version", [6, 4, 2, 1])
def test_delta_rs_reads_every_version_as_delta_spark_does(spark: SparkSession, table: Path, version: int) -> None:
    assert_delta_rs_reads_as_delta_spark(spark, table, version, spark_path=table)


def test_delta_rs_starts_from_delta_sparks_checkpoint_when_older_log_entries_are_gone(
        spark: SparkSession, table: Path, tmp_path: Path) -> None:
    cleaned = Path(shutil.copytree(table, tmp_path / "cleaned"))
    for version in range(3):  # what Delta's log clean-up leaves: the checkpoint at 3 and the entries after it
        (cleaned / "_delta_log" / f"{version:020d}.json").unlink()
    for version in (6, 5, 3):
        assert_delta_rs_reads_as_delta_spark(spark, cleaned, version, spark_path=table)
