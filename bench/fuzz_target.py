"""The wire fuzzing target: the endpoint's framing, request decoder and dispatcher over a real core, in-process.

A :class:`FuzzTarget` treats each input as the bytes one client sent on a fresh connection and processes them the
way the endpoint does (``read_frame`` -> ``decode_request`` -> the API's adapter -> ``encode_response``), with no
socket in between so that a million inputs take minutes. The adapters run on a private event loop whose default
executor runs calls inline, so the adapters' ``asyncio.to_thread`` reads complete within a few loop iterations.

Behind the dispatcher sits a real :class:`~groupcoord.coordinator.GroupCoordinator` persisting into an in-memory
record log, and an in-memory topic log for ListOffsets and Fetch. Every input is checked against the promises of
issue 7:

- nothing but a typed rejection (:class:`~groupcoord.server.codec.RequestRejected`) escapes framing or decoding,
  and a rejection means the connection is closed;
- an adapter never raises (the endpoint would mask that as UNKNOWN_SERVER_ERROR, which the fuzzer counts as a bug);
- every response encodes, and decodes back with the right correlation id;
- a rejected request, or one answered with an error everywhere, appends nothing to the record log.

A breach raises :class:`FuzzFailure`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import io
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from groupcoord.assignment.runner import driver_only_runner
from groupcoord.coordinator import CoordinatorConfig, GroupCoordinator
from groupcoord.coordinator.effects import NeedsTargetAssignment
from groupcoord.log.memory import InMemoryRecordLog
from groupcoord.protocol.schemas import decode_response as decode_schema_response
from groupcoord.runtime.assignments import AssignmentQueue
from groupcoord.runtime.service import CoordinatorService
from groupcoord.runtime.writer import log_persister
from groupcoord.server.adapters.api_versions import unsupported_version_response
from groupcoord.server.api import BrokerAddress, RequestContext
from groupcoord.server.codec import (
    DecodedRequest,
    RequestRejected,
    UnsupportedApi,
    decode_request,
    encode_response,
    response_class,
)
from groupcoord.server.dispatcher import build_dispatcher, served_ranges
from groupcoord.server.framing import read_frame
from groupcoord.server.schema_apis import SchemaResponse
from groupcoord.server.topics import StaticTopics
from groupcoord.server.versions import ApiKey
from groupcoord.topics.appender import AppendResult
from groupcoord.topics.catalog import TopicInfo, check_partition_count
from groupcoord.topics.errors import (
    InvalidPartitionsError,
    OffsetOutOfRangeError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from groupcoord.topics.log_table import TOPIC_LOG_SCHEMA
from groupcoord.topics.names import validate_topic_name
from groupcoord.topics.producer_state import ProducerBatch
from groupcoord.topics.record_columns import RecordColumns
from groupcoord.topics.topic_log import PartitionOffsets, ProducerRecord

MAX_REQUEST_BYTES = 64 * 1024
"""``socket.request.max.bytes`` of the target: small, so that oversized frames are easy to produce."""

TOPICS = {"t1": 3, "events": 2}
"""The topics Metadata, ListOffsets and Fetch know; each partition holds :data:`RECORDS_PER_PARTITION` records."""

RECORDS_PER_PARTITION = 5
NO_ANSWER: dict[str, Any] = {}
"""What an acks-0 Produce gets: no response at all (counted as answered, with no error codes)."""
_SPINS = 25  # loop iterations an answer may take before its request counts as parked (waiting for other members)
_CLOCK_STEP_MS = 37  # manual clock advance per input: session and rebalance timers do expire during a long run


class FuzzFailure(AssertionError):
    """The target broke one of its promises for ``data``."""

    def __init__(self, message: str, data: bytes) -> None:
        super().__init__(f"{message} (input {len(data)} bytes: {data[:64].hex()}{'...' if len(data) > 64 else ''})")
        self.data = data


@dataclass(frozen=True)
class FeedResult:
    """What one input did: responses written, whether the connection was closed and why, requests left parked."""

    answered: int
    closed: bool
    reason: str
    parked: int
    records_written: int


class _InlineExecutor(concurrent.futures.ThreadPoolExecutor):
    """Runs submitted calls at once on the calling thread (asyncio insists on a ThreadPoolExecutor subclass)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:
            future.set_exception(exc)
        return future


class MemoryTopics(StaticTopics):
    """A small topic log in memory: a ``TopicSource`` (its names, counts and ids those of :class:`StaticTopics`),
    ``TopicReader`` and ``TopicWriter`` without Delta I/O.

    Appends are acknowledged at once (the wire checks of Produce still run) and are not readable afterwards, so
    every input sees the same records.
    """

    def __init__(self, partition_counts: Mapping[str, int], records_per_partition: int) -> None:
        super().__init__(partition_counts)
        self._records = records_per_partition
        self._timestamp = datetime(2024, 1, 1, tzinfo=UTC)

    # --- the topic admin APIs' catalog calls, in memory (the catalog's checks) ----------------------------------

    def describe(self, name: str) -> TopicInfo:
        """The topic, or UnknownTopicOrPartitionError."""
        if name not in self._counts:
            raise UnknownTopicOrPartitionError(f"Topic '{name}' does not exist.")
        return TopicInfo(name, str(self.topic_ids()[name]), self._counts[name], None, self._timestamp,
                         self._timestamp)

    def create(self, name: str, partitions: int) -> TopicInfo:
        """Add a topic (its partitions hold the same records as the others')."""
        validate_topic_name(name)
        check_partition_count(partitions)
        if name in self._counts:
            raise TopicAlreadyExistsError(f"Topic '{name}' already exists.")
        self._counts[name] = partitions
        return self.describe(name)

    def alter(self, name: str, partitions: int) -> TopicInfo:
        """Grow a topic."""
        check_partition_count(partitions)
        if partitions <= self.describe(name).partitions:
            raise InvalidPartitionsError(f"Topic '{name}' cannot shrink or keep its partition count.")
        self._counts[name] = partitions
        return self.describe(name)

    def offsets(self, topic: str) -> Mapping[int, PartitionOffsets]:
        """Every partition holds offsets 0 .. records_per_partition - 1."""
        if topic not in self._counts:
            raise UnknownTopicOrPartitionError(f"unknown topic {topic!r}")
        return {p: PartitionOffsets(0, self._records) for p in range(self._counts[topic])}

    def append(self, topic: str, partition: int, records: Sequence[ProducerRecord] | RecordColumns, *,
               producer: ProducerBatch | None = None) -> concurrent.futures.Future[AppendResult]:
        """Acknowledge ``records`` at once at the partition's end, or fail as the real appender does."""
        future: concurrent.futures.Future[AppendResult] = concurrent.futures.Future()
        if not 0 <= partition < self._counts.get(topic, 0):
            future.set_exception(UnknownTopicOrPartitionError(f"unknown partition {topic}-{partition}"))
        else:
            future.set_result(AppendResult(self._records, 0))
        return future

    def read(self, topic: str, partition: int, from_offset: int, max_records: int) -> pa.Table:
        """The rows from ``from_offset`` on."""
        if partition not in self.offsets(topic):
            raise UnknownTopicOrPartitionError(f"unknown partition {topic}-{partition}")
        if not 0 <= from_offset <= self._records:
            raise OffsetOutOfRangeError(f"offset {from_offset} outside 0..{self._records}")
        end = min(self._records, from_offset + max(max_records, 0))
        rows = [{"partition": partition, "offset": o, "timestamp": self._timestamp, "key": b"k%d" % o,
                 "value": b"v%d" % o} for o in range(from_offset, end)]
        return pa.Table.from_pylist(rows, schema=TOPIC_LOG_SCHEMA)


def error_codes(response: Any) -> list[int]:
    """Every ``error_code`` anywhere in a kafka-python response object (or its ``to_dict()`` form), or every
    ``ErrorCode`` in a :class:`SchemaResponse`."""
    found: list[int] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("error_code", "ErrorCode") and isinstance(value, int):
                    found.append(value)
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    if isinstance(response, SchemaResponse):
        walk(dict(response.body))
    else:
        walk(response if isinstance(response, dict) else response.to_dict())
    return found


class FuzzTarget:
    """Framing, decoder and dispatcher over a real core and an in-memory log; :meth:`feed` one input at a time."""

    def __init__(self, *, max_request_bytes: int = MAX_REQUEST_BYTES) -> None:
        self.max_request_bytes = max_request_bytes
        self.loop = asyncio.new_event_loop()
        self.loop.set_default_executor(_InlineExecutor(max_workers=1))
        self.log = InMemoryRecordLog()
        self.now_ms = 1_700_000_000_000
        self.core = GroupCoordinator(CoordinatorConfig(initial_rebalance_delay_ms=0))
        topics = MemoryTopics(TOPICS, RECORDS_PER_PARTITION)
        # Consumer groups' targets by the assignors' Python engine, inline (the loop's executor runs threads inline).
        runner = driver_only_runner(topics.partition_counts)
        self.targets = AssignmentQueue(runner.targets, kind=NeedsTargetAssignment, stopped=lambda: False,
                                       complete=lambda answer: self.service.apply(
                                           self.core.complete(answer, self.now_ms)))
        self.service = CoordinatorService(self.core, persist=log_persister(self.log), clock=lambda: self.now_ms,
                                          on_effects=self.targets.on_effects)
        self.service.apply(self.core.on_metadata_change(topics.partition_counts(), self.now_ms,
                                                        topic_ids=topics.topic_ids()))
        self.loop.run_until_complete(_settle())  # the topic snapshot's release, before any input is counted
        self.dispatcher = build_dispatcher(topics=topics, service=self.service, topic_reader=topics,
                                           topic_writer=topics, consumer_groups=True, topic_admin=topics,
                                           credentials=self.core.credentials)
        self.ranges = served_ranges(self.dispatcher)
        self.broker = BrokerAddress("127.0.0.1", 9092)
        self.inputs = 0

    def close(self) -> None:
        """Cancel whatever is still parked and close the loop."""
        pending = asyncio.all_tasks(self.loop)
        for task in pending:
            task.cancel()
        if pending:
            self.loop.run_until_complete(asyncio.wait(pending))
        self.loop.close()

    def feed(self, data: bytes) -> FeedResult:
        """Process ``data`` as everything one client sent on a new connection; raises :class:`FuzzFailure`."""
        return self.loop.run_until_complete(self.feed_async(data))

    def feed_payload(self, payload: bytes) -> FeedResult:
        """Process one request payload (everything after the size prefix) in a correctly sized frame."""
        return self.feed(len(payload).to_bytes(4, "big") + payload)

    async def feed_async(self, data: bytes) -> FeedResult:
        """:meth:`feed` on the running loop."""
        self.inputs += 1
        self.now_ms += _CLOCK_STEP_MS
        # Fire due timers first: the core fires them on every request too, and their records are not the input's.
        self.service.apply(self.core.advance(self.now_ms))
        await self._quiesce()
        reader = asyncio.StreamReader()
        reader.feed_data(data)
        reader.feed_eof()
        answered = written = 0
        while True:
            before = self.log.version()
            try:
                payload = await read_frame(reader, max_bytes=self.max_request_bytes)
                if payload is None:
                    return FeedResult(answered, False, "end of stream", 0, written)
                outcome = await self._answer(payload, data)
            except RequestRejected as exc:
                await self._quiesce()
                if self.log.version() != before:
                    raise FuzzFailure(f"a rejected frame wrote to the record log ({exc})", data) from None
                return FeedResult(answered, True, type(exc).__name__, 0, written)
            if outcome is None:
                return FeedResult(answered, False, "parked", 1, written)
            await self._quiesce()
            wrote = self.log.version() - before
            codes = error_codes(outcome)
            if wrote and codes and all(codes):
                raise FuzzFailure(f"a request answered only with errors {sorted(set(codes))} wrote {wrote} "
                                  "record batch(es)", data)
            answered += 1
            written += wrote

    async def _quiesce(self) -> None:
        """Let every write the last step set off land before the next is counted: a persist, and for a consumer
        group the target assignment it asked for and the records of its completion, which take more loop turns
        (a timer's expiry at the start of one input once landed during the next frame, counted as that frame's)."""
        version, quiet = self.log.version(), 0
        for _ in range(_QUIESCE_ROUNDS):
            await _settle()
            if self.log.version() != version:
                version, quiet = self.log.version(), 0
            else:
                quiet += 1
                if quiet >= _QUIET_ROUNDS:
                    return

    async def _answer(self, payload: bytes, data: bytes) -> Any:
        """The decoded response to one payload, ``None`` if it is parked; raises RequestRejected to close."""
        try:
            request = decode_request(payload, ranges=self.ranges)
        except UnsupportedApi as exc:
            if exc.header.api_key != ApiKey.API_VERSIONS:
                raise
            response = unsupported_version_response(self.ranges)
            return self._round_trip(response, ApiKey.API_VERSIONS, exc.header.correlation_id, data)
        except RequestRejected:
            raise
        except Exception as exc:
            raise FuzzFailure(f"decoding raised {exc!r} instead of a typed rejection", data) from exc
        handler = self.dispatcher[request.api_key]
        ctx = RequestContext(request, self.broker, "/127.0.0.1")
        task = asyncio.ensure_future(handler.handle(ctx))
        for _ in range(_SPINS):
            if task.done():
                break
            await asyncio.sleep(0)
        if not task.done():
            task.cancel()  # a JoinGroup waiting for the group, a Fetch long poll: the endpoint would wait too
            await asyncio.wait({task})
            return None
        rejected = task.exception()
        if isinstance(rejected, RequestRejected):
            raise rejected  # an acks-0 Produce refused: the endpoint closes the connection
        if task.exception() is not None:
            raise FuzzFailure(f"the {request.api_key.name} v{request.api_version} adapter raised "
                              f"{task.exception()!r}", data)
        if task.result() is None:
            if request.api_key != ApiKey.PRODUCE or request.body.acks != 0:
                raise FuzzFailure(f"the {request.api_key.name} v{request.api_version} adapter answered nothing", data)
            return NO_ANSWER
        return self._round_trip(task.result(), request.api_key, request.header.correlation_id, data, request)

    def _round_trip(self, response: Any, api_key: ApiKey, correlation_id: int, data: bytes,
                    request: DecodedRequest | None = None) -> Any:
        where = f"{api_key.name} v{request.api_version}" if request else api_key.name
        try:
            frame = encode_response(response, correlation_id=correlation_id)
        except Exception as exc:
            raise FuzzFailure(f"the {where} response does not encode: {exc!r}", data) from exc
        size = int.from_bytes(frame[:4], "big")
        if size != len(frame) - 4:
            raise FuzzFailure(f"the {where} response frame announces {size} bytes, carries {len(frame) - 4}", data)
        try:
            if isinstance(response, SchemaResponse):
                header, _ = decode_schema_response(api_key, response.version, frame[4:])
                answered_id = header["CorrelationId"]
            else:
                decoded = response_class(api_key).decode(io.BytesIO(frame[4:]), version=response.version,
                                                         header=True)
                answered_id = decoded.header.correlation_id
        except Exception as exc:
            raise FuzzFailure(f"the {where} response does not decode back: {exc!r}", data) from exc
        if answered_id != correlation_id:
            raise FuzzFailure(f"the {where} response carries correlation id {answered_id}, not {correlation_id}",
                              data)
        return response


_QUIET_ROUNDS = 4
"""Rounds of :func:`_settle` without a new log version after which a step's writes count as landed."""
_QUIESCE_ROUNDS = 200


async def _settle() -> None:
    """Let persist tasks and releases scheduled by the last step run."""
    for _ in range(3):
        await asyncio.sleep(0)


def iterate(target: FuzzTarget, inputs: Iterator[bytes]) -> Iterator[FeedResult | FuzzFailure]:
    """Feed every input on one loop run per chunk; yields each result or failure (the run goes on)."""
    chunk: list[bytes] = []

    async def run(batch: list[bytes]) -> list[FeedResult | FuzzFailure]:
        results: list[FeedResult | FuzzFailure] = []
        for data in batch:
            try:
                results.append(await target.feed_async(data))
            except FuzzFailure as failure:
                results.append(failure)
        return results

    for data in inputs:
        chunk.append(data)
        if len(chunk) == 1000:
            yield from target.loop.run_until_complete(run(chunk))
            chunk = []
    if chunk:
        yield from target.loop.run_until_complete(run(chunk))
