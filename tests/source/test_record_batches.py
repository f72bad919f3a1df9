"""The Kafka reader's batches, built from confluent-kafka messages: Spark's exact Arrow schema, only the range's
records of the range's partition."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
from confluent_kafka import Message

from groupcoord.source.records import _in_range, _messages_as_kafka, arrow_schema

CREATE_TIME, LOG_APPEND_TIME = 1, 2  # librdkafka's timestamp types


def message(offset: int, partition: int = 0, topic: str = "t", kind: int = CREATE_TIME) -> Message:
    """A consumed record of ``topic``-``partition`` at ``offset``, stamped ``offset`` ms after the epoch."""
    return Message(topic=topic, partition=partition, offset=offset, key=None if offset % 2 else b"k%d" % offset,
                   value=b"v%d" % offset, timestamp=(kind, 1_700_000_000_000 + offset))


def test_a_batch_has_spark_kafka_schema_exactly_and_kafka_timestamp_types() -> None:
    messages = [message(7), message(8, kind=LOG_APPEND_TIME)]

    batch = _messages_as_kafka(messages, [7, 8], "t", 0, arrow_schema(False), False)

    assert batch.schema == arrow_schema(False)
    assert batch.to_pylist() == [
        {"key": None if o % 2 else b"k%d" % o, "value": b"v%d" % o, "topic": "t", "partition": 0, "offset": o,
         "timestamp": dt.datetime.fromtimestamp(1_700_000_000 + o / 1000, dt.UTC), "timestampType": kind}
        for o, kind in ((7, 0), (8, 1))]
    assert batch.schema.field("timestamp").type == pa.timestamp("us", tz="UTC")


def test_only_the_ranges_records_of_its_partition_are_kept_and_the_end_is_seen() -> None:
    within = [message(o) for o in range(3, 8)]

    kept, offsets, past_end = _in_range(within, "t", 0, 4, 6)
    assert ([m.offset() for m in kept], offsets, past_end) == ([4, 5], [4, 5], True)

    mixed = [message(2, partition=1), *within, message(9, topic="other")]
    kept, offsets, past_end = _in_range(mixed, "t", 0, 4, 10)
    assert ([m.offset() for m in kept], offsets, past_end) == ([4, 5, 6, 7], [4, 5, 6, 7], False)
