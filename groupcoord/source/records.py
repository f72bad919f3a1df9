"""Reading one offset range of one partition as Arrow record batches in Spark's Kafka source schema (executor side).

The schema is Spark's Kafka source's: ``key``, ``value`` (binary), ``topic``, ``partition``, ``offset``,
``timestamp``, ``timestampType`` and, with ``includeHeaders``, ``headers`` (``array<struct<key, value>>``, null for
a record without headers, as there).

- :meth:`RangeReader.read` reads the state root's topic log (Arrow from Delta files, converted column-wise) or a
  Kafka cluster with confluent-kafka (librdkafka decodes the record batches in native code; each Arrow batch is a
  whole ``consume()`` call's messages);
- a reader keeps its topic logs and its Kafka client open between reads: one per Spark task of the ``groupcoord``
  source (:func:`read_range`), one per member task of the executors-as-members engine (``groupcoord.ingest``),
  which reads every batch of its partitions through it.

``fail_on_data_loss`` is Spark's ``failOnDataLoss``: offsets of the range that retention removed fail the read with
:class:`DataLossError`, or are skipped with a warning.
"""

from __future__ import annotations

import bisect
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:
    from confluent_kafka import Consumer, Message, TopicPartition
    from confluent_kafka._types import HeadersType
    from pyspark.sql.types import StructType

    from groupcoord.topics import TopicLog

log = logging.getLogger("groupcoord.source.records")

READ_CHUNK_RECORDS = 100_000
"""Most records of one Arrow batch read from the embedded log."""

KAFKA_CONSUME_RECORDS = 10_000
"""Most messages one ``consume()`` call of the Kafka reader returns (one Arrow batch)."""

READER_FETCH_WAIT_MS = 10
"""The reader's ``fetch.wait.max.ms`` (librdkafka's default is 500). A reader only reads offsets below the log end it
has seen, so it never needs the broker to hold a fetch for new records; and a held fetch delays every later request on
that connection: with the default, each range after the first waited 0.5 s for its watermarks and 0.5 s more for its
first records (1 s per partition where 60 ms do). A ``kafka.fetch.wait.max.ms`` option overrides it."""


class DataLossError(RuntimeError):
    """Offsets a batch planned to read are gone (retention, a recreated topic) and ``failOnDataLoss`` is true."""


def kafka_source_schema(include_headers: bool) -> StructType:
    """Spark's Kafka source schema (with ``headers`` when ``include_headers``)."""
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
        TimestampType,
    )

    fields = [StructField("key", BinaryType()), StructField("value", BinaryType()), StructField("topic", StringType()),
              StructField("partition", IntegerType()), StructField("offset", LongType()),
              StructField("timestamp", TimestampType()), StructField("timestampType", IntegerType())]
    if include_headers:
        fields.append(StructField("headers", ArrayType(StructType([StructField("key", StringType()),
                                                                   StructField("value", BinaryType())]))))
    return StructType(fields)


def arrow_schema(include_headers: bool) -> pa.Schema:
    """The Arrow schema Spark expects of the batches a read returns (its own conversion of the Spark schema)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(kafka_source_schema(include_headers), timezone="UTC")


@dataclass(frozen=True)
class RangeRead:
    """What a read needs besides the range: the schema switches and where the records live."""

    include_headers: bool
    fail_on_data_loss: bool
    state_root: str
    bootstrap_servers: str | None = None
    kafka_settings: Mapping[str, str] = field(default_factory=dict)
    poll_timeout_ms: int = 120000
    storage: Mapping[str, str] = field(default_factory=dict)
    """The state root's ``storage.*`` settings when it is on S3 (never secret values)."""


def read_range(spec: RangeRead, topic: str, partition: int, low: int, high: int) -> Iterator[pa.RecordBatch]:
    """Records ``[low, high)`` of ``topic``-``partition`` from wherever ``spec`` says they live, with a reader of
    their own (one Spark task's read)."""
    with RangeReader(spec) as reader:
        yield from reader.read(topic, partition, low, high)


def _data_loss(spec: RangeRead, what: str) -> None:
    if spec.fail_on_data_loss:
        raise DataLossError(f"{what}. Some data may have been lost because it is no longer available (retention, "
                            "or a deleted topic). If you want the query to go on, set failOnDataLoss to false.")
    log.warning("%s; skipping them (failOnDataLoss is false)", what)


def kafka_client_config(servers: str, settings: Mapping[str, str]) -> dict[str, object]:
    """The confluent-kafka consumer settings of a reader: no group, no commits, errors on out-of-range offsets."""
    return {"bootstrap.servers": servers, "group.id": "groupcoord-source-reader", "enable.auto.commit": False,
            "enable.auto.offset.store": False, "auto.offset.reset": "error", "enable.partition.eof": False,
            **settings}


class RangeReader:
    """Reads offset ranges of partitions as Arrow batches in Spark's Kafka source schema, from the state root's topic
    log or from a Kafka cluster, keeping its topic logs and its Kafka consumer open between reads. Use it from one
    thread; :meth:`close` (or ``with``) releases the consumer."""

    def __init__(self, spec: RangeRead) -> None:
        self.spec = spec
        self._schema: pa.Schema | None = None
        self._logs: dict[str, TopicLog] = {}
        self._consumer: Consumer | None = None

    def __enter__(self) -> RangeReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema of the batches (Spark's own conversion of its Kafka source schema)."""
        if self._schema is None:
            self._schema = arrow_schema(self.spec.include_headers)
        return self._schema

    def read(self, topic: str, partition: int, low: int, high: int) -> Iterator[pa.RecordBatch]:
        """Records ``[low, high)`` of ``topic``-``partition``; removed offsets follow ``fail_on_data_loss``."""
        if self.spec.bootstrap_servers is None:
            return self._embedded(topic, partition, low, high)
        return self._kafka(topic, partition, low, high)

    def close(self) -> None:
        """Close the Kafka consumer, if one was opened."""
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            consumer.close()

    # --- the embedded topic log ---------------------------------------------------------------------------------

    def _topic_log(self, topic: str) -> TopicLog:
        from groupcoord.state_root import StateRoot
        from groupcoord.topics import TopicLog

        found = self._logs.get(topic)
        if found is None:
            found = self._logs[topic] = TopicLog(StateRoot.open(self.spec.state_root, storage=self.spec.storage), topic)
        return found

    def _embedded(self, topic: str, partition: int, low: int, high: int) -> Iterator[pa.RecordBatch]:
        spec, schema, topic_log = self.spec, self.schema, self._topic_log(topic)
        position = low
        log_start = topic_log.log_start_offset(partition)
        if position < log_start:
            _data_loss(spec, f"offsets {position} to {min(log_start, high) - 1} of {topic}-{partition} were removed "
                             f"(the log starts at {log_start})")
            position = log_start
        while position < high:
            table = topic_log.read(partition, position, min(READ_CHUNK_RECORDS, high - position))
            if table.num_rows == 0:
                _data_loss(spec, f"offsets {position} to {high - 1} of {topic}-{partition} are not in the log")
                return
            yield from _log_rows_as_kafka(table, topic, schema, spec.include_headers).to_batches()
            position = int(table.column("offset")[-1].as_py()) + 1

    # --- a Kafka cluster ----------------------------------------------------------------------------------------

    def _kafka_consumer(self) -> Consumer:
        if self._consumer is None:
            from confluent_kafka import Consumer

            assert self.spec.bootstrap_servers is not None
            settings = {"fetch.wait.max.ms": str(READER_FETCH_WAIT_MS), **self.spec.kafka_settings}
            self._consumer = Consumer(kafka_client_config(self.spec.bootstrap_servers, settings))
        return self._consumer

    def _kafka(self, topic: str, partition: int, low: int, high: int) -> Iterator[pa.RecordBatch]:
        from confluent_kafka import TopicPartition

        spec, consumer = self.spec, self._kafka_consumer()
        timeout_s = spec.poll_timeout_ms / 1000
        earliest, latest = watermarks(consumer, TopicPartition(topic, partition), timeout_s,
                                      lambda start, end: low < start or high > end)
        position = low
        if position < earliest:
            _data_loss(spec, f"offsets {position} to {min(earliest, high) - 1} of {topic}-{partition} were removed "
                             f"(the log starts at {earliest})")
            position = earliest
        if high > latest:
            _data_loss(spec, f"offsets {max(latest, position)} to {high - 1} of {topic}-{partition} are not on the "
                             f"cluster (its log ends at {latest})")
            high = latest
        if position >= high:
            return
        consumer.assign([TopicPartition(topic, partition, position)])
        try:
            yield from self._consume(consumer, topic, partition, position, high)
        finally:
            consumer.unassign()  # no fetching past the range while the reader waits for its next one

    def _consume(self, consumer: Consumer, topic: str, partition: int, position: int,
                 high: int) -> Iterator[pa.RecordBatch]:
        from confluent_kafka import TopicPartition

        spec, schema = self.spec, self.schema
        timeout_s = spec.poll_timeout_ms / 1000
        deadline = time.monotonic() + timeout_s
        while position < high:
            messages = consumer.consume(num_messages=min(KAFKA_CONSUME_RECORDS, high - position), timeout=0.5)
            wanted, offsets, past_end = _in_range(messages, topic, partition, position, high)
            if wanted:
                yield _messages_as_kafka(wanted, offsets, topic, partition, schema, spec.include_headers)
                position = offsets[-1] + 1
                deadline = time.monotonic() + timeout_s
            if past_end:
                break
            # Gaps (compaction, transaction markers): the consumer's position tells where it really is.
            (current,) = consumer.position([TopicPartition(topic, partition)])
            position = max(position, current.offset)
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out reading {topic}-{partition} at offset {position} (wanted up to "
                                   f"{high - 1}) within kafkaConsumer.pollTimeoutMs={spec.poll_timeout_ms}")


WATERMARK_CONFIRMATIONS = 2
"""How many more times :func:`watermarks` asks before it believes a doubtful answer."""


def watermarks(consumer: Consumer, partition: TopicPartition, timeout_s: float,
               doubtful: Callable[[int, int], bool]) -> tuple[int, int]:
    """The partition's log start and end offsets, asked again (up to :data:`WATERMARK_CONFIRMATIONS` times) while
    ``doubtful(start, end)``: the smallest start and the largest end seen.

    librdkafka's watermark query sends one request for each end; on a loaded machine it answered a log start of 3 for
    a fresh partition holding offsets 0-2 (the end offset twice, it seems), and a query failed on data loss that did
    not happen (with ``failOnDataLoss`` false it would have skipped those records). A start and an end only grow, so
    the smallest start and the largest end seen can only understate a loss, never invent one; records removed in that
    very instant then fail the read with Kafka's out-of-range error (``auto.offset.reset`` is ``error``) instead of
    the data-loss message, and nothing is skipped."""
    earliest, latest = consumer.get_watermark_offsets(partition, timeout=timeout_s, cached=False)
    for _ in range(WATERMARK_CONFIRMATIONS):
        if not doubtful(earliest, latest):
            break
        again = consumer.get_watermark_offsets(partition, timeout=timeout_s, cached=False)
        if again != (earliest, latest):
            log.info("watermarks of %s-%d: %s, then %s", partition.topic, partition.partition, (earliest, latest),
                     again)
        earliest, latest = min(earliest, again[0]), max(latest, again[1])
    return earliest, latest


def _log_rows_as_kafka(table: pa.Table, topic: str, schema: pa.Schema, include_headers: bool) -> pa.Table:
    rows = table.num_rows
    timestamp_type = pc.fill_null(table.column("timestamp_type"), 0) if "timestamp_type" in table.column_names \
        else pa.repeat(pa.scalar(0, pa.int32()), rows)
    columns = [table.column("key"), table.column("value"), pa.repeat(pa.scalar(topic, pa.string()), rows),
               table.column("partition"), table.column("offset"),
               table.column("timestamp").cast(schema.field("timestamp").type), timestamp_type]
    if include_headers:
        header_type = schema.field("headers").type
        if "headers" in table.column_names:
            headers = table.column("headers").cast(header_type)
            empty = pc.fill_null(pc.equal(pc.list_value_length(headers), 0), True)
            columns.append(pc.if_else(empty, pa.nulls(rows, header_type), headers))
        else:
            columns.append(pa.nulls(rows, header_type))
    return pa.Table.from_arrays(columns, schema=schema)


def _in_range(messages: Sequence[Message], topic: str, partition: int, position: int,
              high: int) -> tuple[list[Message], list[int], bool]:
    """The messages of ``topic``-``partition`` at offsets ``[position, high)`` (a reused consumer's earlier
    assignments stay out), their offsets, and whether a message of the partition at ``high`` or past it came; an
    error message raises its error.

    A handful of C calls per message and no Python function: this runs for every record the source reads (a
    per-message helper function with an import in it cost 20 us a record, more than librdkafka's fetch and decode)."""
    from confluent_kafka import KafkaException

    errors = [error for error in (m.error() for m in messages) if error is not None]
    if errors:
        raise KafkaException(errors[0])
    offsets = cast("list[int]", [m.offset() for m in messages])  # only error messages have none: raised above
    if all(m.partition() == partition for m in messages) and all(m.topic() == topic for m in messages):
        first, end = bisect.bisect_left(offsets, position), bisect.bisect_left(offsets, high)  # in offset order
        return list(messages[first:end]), offsets[first:end], end < len(messages)
    fresh = [i for i, m in enumerate(messages)
             if offsets[i] >= position and m.partition() == partition and m.topic() == topic]
    wanted = [i for i in fresh if offsets[i] < high]
    return [messages[i] for i in wanted], [offsets[i] for i in wanted], len(wanted) < len(fresh)


_LOG_APPEND_TIME = 2
"""librdkafka's TIMESTAMP_LOG_APPEND_TIME (Kafka's timestamp type 1; its TIMESTAMP_CREATE_TIME, 1, is Kafka's 0)."""


def _messages_as_kafka(messages: Sequence[Message], offsets: Sequence[int], topic: str, partition: int,
                       schema: pa.Schema, include_headers: bool) -> pa.RecordBatch:
    """``messages`` (of ``topic``-``partition``, at ``offsets``) as one batch of ``schema``: one C call per message
    and column, the rest column-wise."""
    rows = len(messages)
    kinds, stamps = zip(*[m.timestamp() for m in messages], strict=True)
    kind = pa.array(kinds, pa.int32())
    columns = [
        pa.array([m.key() for m in messages], pa.binary()),
        pa.array([m.value() for m in messages], pa.binary()),
        pa.repeat(pa.scalar(topic, pa.string()), rows),
        pa.repeat(pa.scalar(partition, pa.int32()), rows),
        pa.array(offsets, pa.int64()),
        pa.array(stamps, pa.int64()).cast(pa.timestamp("ms", tz="UTC")).cast(schema.field("timestamp").type),
        # librdkafka's TIMESTAMP_LOG_APPEND_TIME (2) is Kafka's type 1; create time (1) and none (0) are 0
        pc.equal(kind, _LOG_APPEND_TIME).cast(pa.int32()),
    ]
    if include_headers:
        columns.append(pa.array([[{"key": k, "value": v} for k, v in _header_pairs(h)] if h else None
                                 for h in (m.headers() for m in messages)], schema.field("headers").type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _header_pairs(headers: HeadersType) -> list[tuple[str, bytes | None]]:
    """confluent-kafka's headers (a list of pairs, or a dict) as ``(key, value)`` pairs with byte values."""
    items = list(headers.items()) if isinstance(headers, dict) else headers
    return [(k, v.encode() if isinstance(v, str) else v) for k, v in items]
