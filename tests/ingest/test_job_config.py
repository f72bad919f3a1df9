"""The job's configuration and command line: flags and keys, bad input as one line and exit code 2."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from groupcoord.config import ConfigError, resolve_config
from groupcoord.ingest.config import IngestConfig
from groupcoord.ingest.entry import main
from groupcoord.ingest.job import subscribed_topics
from groupcoord.ingest.sources import SourceSpec
from groupcoord.state_root import StateRoot
from groupcoord.topics import TopicCatalog


def ingest_config(**flags: object) -> IngestConfig:
    """Resolve an :class:`IngestConfig` from explicit flags (short key names)."""
    return IngestConfig.from_config(resolve_config(flags=flags))


def test_flags_and_keys_make_one_frozen_config() -> None:
    config = IngestConfig.from_config(resolve_config(
        conf=["group.id=g", "topics=a, b", "sink=/tmp/s", "spark.groupcoord.max.records.per.batch=7"],
        flags={"members": 3, "available.now": True}))
    assert (config.group_id, config.topics, config.pattern, config.members) == ("g", ("a", "b"), None, 3)
    assert (config.available_now, config.max_records_per_batch, config.source) == (True, 7, "embedded")
    assert (config.auto_offset_reset, config.metadata_refresh_ms) == ("earliest", 30000)


def test_the_default_engine_is_structured_and_members_is_one_flag_away() -> None:
    assert resolve_config()["engine"] == "structured"
    assert resolve_config(flags={"engine": "members"})["engine"] == "members"
    assert resolve_config(conf=["engine=members"])["engine"] == "members"


@pytest.mark.parametrize(("flags", "message"), [
    ({"topics": "a", "sink": "/s"}, "no group"),
    ({"group.id": "g", "sink": "/s"}, "exactly one of --topics"),
    ({"group.id": "g", "topics": "a", "pattern": "a.*", "sink": "/s"}, "exactly one of --topics"),
    ({"group.id": "g", "pattern": "(", "sink": "/s"}, "not a regular expression"),
    ({"group.id": "g", "topics": "a"}, "no sink"),
    ({"group.id": "g", "topics": "a,", "sink": "/s"}, "empty topic name"),
])
def test_incomplete_configuration_is_refused_naming_what_is_missing(flags: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ingest_config(**flags)


def test_bad_values_are_refused_by_the_registry() -> None:
    with pytest.raises(ConfigError, match=r"auto\.offset\.reset"):
        resolve_config(flags={"auto.offset.reset": "newest"})
    with pytest.raises(ConfigError, match="members"):
        resolve_config(flags={"members": 0})


def test_sources_parse_embedded_and_kafka_and_refuse_anything_else(tmp_path: Path) -> None:
    assert not SourceSpec.parse("embedded", state_root=str(tmp_path)).is_kafka
    kafka = SourceSpec.parse("kafka://h1:9092,h2:9093", state_root=str(tmp_path))
    assert kafka.bootstrap == (("h1", 9092), ("h2", 9093))
    assert kafka.describe() == "kafka://h1:9092,h2:9093"
    for bad in ("kafka://h1", "kafka://", "pulsar://h:1", "Embedded"):
        with pytest.raises(ConfigError, match="source"):
            SourceSpec.parse(bad, state_root=str(tmp_path))


def test_topics_must_be_in_the_catalog_and_a_pattern_matches_whole_names(tmp_path: Path) -> None:
    root = StateRoot.open(tmp_path / "state", create=True)
    catalog = TopicCatalog(root)
    for name in ("orders", "orders_eu", "xorders"):
        catalog.create(name, 1)
    assert subscribed_topics(catalog, ingest_config(**{"group.id": "g", "pattern": "orders.*", "sink": "/s"})) == [
        "orders", "orders_eu"]
    with pytest.raises(ConfigError, match=r"unknown topic.*nope"):
        subscribed_topics(catalog, ingest_config(**{"group.id": "g", "topics": "orders,nope", "sink": "/s"}))


_OTHER_THREADS_LOG = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ (DEBUG|INFO) groupcoord\.")
"""A DEBUG or INFO record of the groupcoord logger: in this process it can come from another test's background
maintenance still running (the CPU-hog make test caught a state-table compaction's INFO line here)."""


def _job_lines(err: str) -> list[str]:
    """What the job itself wrote to stderr, without other threads' informational log records."""
    return [line for line in err.strip().splitlines() if not _OTHER_THREADS_LOG.match(line)]


def test_the_job_reports_bad_input_in_one_line_with_exit_code_2(
        spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--topics", "a", "--sink", str(tmp_path / "s"), "--state-root", str(tmp_path / "st")]) == 2
    assert _job_lines(capsys.readouterr().err) == [
        "streaming_ingest: error: no group: pass --group or set spark.groupcoord.group.id"]
    (tmp_path / "not-a-root").mkdir()
    (tmp_path / "not-a-root" / "file").write_text("x")
    assert main(["--group", "g", "--topics", "a", "--sink", str(tmp_path / "s"),
                 "--state-root", str(tmp_path / "not-a-root")]) == 2
    assert "not a groupcoord state root" in capsys.readouterr().err
    assert main(["--group", "g", "--topics", "a", "--sink", str(tmp_path / "s"), "--source", "kafka://nohost",
                 "--state-root", str(tmp_path / "st")]) == 2
    assert len(_job_lines(capsys.readouterr().err)) == 1
