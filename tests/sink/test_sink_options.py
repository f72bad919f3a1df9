"""Bad ``groupcoord-delta`` options and tables fail the query at start, with a message naming the problem: unit
checks of the option parser and the table shape, and the same failures through a real query in local Spark."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import SparkSession

from groupcoord.sink.options import (
    SinkOptionError,
    SinkOptions,
    check_table_schema,
    sink_table_schema,
)
from groupcoord.state_root import StateRoot
from groupcoord.storage.tables import open_or_create
from tests.sink.sink_helpers import Source, register_root, start_query

GOOD = {"path": "/tmp/t", "group.id": "g", "checkpointLocation": "file:///tmp/c", "state.root": "/tmp/s"}


def test_the_options_resolve_over_the_session_defaults() -> None:
    options = SinkOptions.parse({k: v for k, v in GOOD.items() if k != "state.root"}, {"state.root": "/data/gc"})
    assert options == SinkOptions(path="/tmp/t", group_id="g", checkpoint="/tmp/c", state_root="/data/gc")
    assert SinkOptions.parse({**GOOD, "assignors": "range", "COMMIT.ATTEMPTS": "2"}).commit_attempts == 2
    assert SinkOptions.parse({**GOOD, "queryName": "q"}) == SinkOptions.parse(GOOD)  # Spark adds it


@pytest.mark.parametrize(("options", "message"), [
    ({**GOOD, "grup.id": "g"}, "unknown option 'grup.id' (did you mean 'group.id'?)"),
    ({k: v for k, v in GOOD.items() if k != "path"}, "the option 'path' is required"),
    ({k: v for k, v in GOOD.items() if k != "group.id"}, "the option 'group.id' is required"),
    ({k: v for k, v in GOOD.items() if k != "checkpointLocation"}, "the option 'checkpointlocation' is required"),
    ({**GOOD, "commit.attempts": "0"}, "commit.attempts='0': expected a positive integer"),
])
def test_bad_options_are_named(options: dict[str, str], message: str) -> None:
    with pytest.raises(SinkOptionError) as raised:
        SinkOptions.parse(options)
    assert message in str(raised.value)


def test_the_stream_needs_topic_partition_and_offset() -> None:
    with pytest.raises(SinkOptionError, match="the stream has no 'offset' column"):
        sink_table_schema(pa.schema([("topic", pa.string()), ("partition", pa.int32())]))
    with pytest.raises(SinkOptionError, match="the column 'partition' is int64, the sink needs int32"):
        sink_table_schema(pa.schema([("topic", pa.string()), ("partition", pa.int64()), ("offset", pa.int64())]))


def test_an_existing_table_of_other_columns_is_refused() -> None:
    stream = pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64())])
    table = pa.schema([*stream, ("value", pa.binary())])
    with pytest.raises(SinkOptionError, match=r"the table's not in the stream: value binary"):
        check_table_schema(table, stream, "/t")


FAILS_WITHIN_S = 300


@pytest.mark.spark
def test_a_query_with_a_bad_sink_fails_at_start_naming_the_problem(spark: SparkSession, tmp_path: Path) -> None:
    root = StateRoot.open(tmp_path / "state", create=True)
    register_root(spark, root)
    source = Source(root)
    source.create("orders", partitions=2, records=10)
    wrong = tmp_path / "wrong"
    open_or_create(wrong, pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64())]))
    cases = [
        ({"path": str(wrong)}, "the table at .* has other columns than the stream"),
        ({"bogus": "1"}, "unknown option 'bogus'"),
        ({"group.id": "another"}, "group.id 'another' is not the group of the query's source"),
    ]
    for index, (options, message) in enumerate(cases):
        with pytest.raises((StreamingQueryException, Exception), match=message):
            query = start_query(spark, source, "bad", "orders", tmp_path / "table", tmp_path / f"ckpt{index}",
                                sink_options=options)
            # Bounded only against a hang: the query fails once its first batch reaches the sink, which on a machine
            # with both cores busy took more than a minute (the source's member joins the group first).
            assert not query.awaitTermination(FAILS_WITHIN_S), "the query finished without failing"
            raise AssertionError(f"the query did not fail within {FAILS_WITHIN_S} s")
