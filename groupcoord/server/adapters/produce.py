"""Produce v3-v10 into the embedded topic log, and InitProducerId for idempotent producers.

Each partition's batch is read and checked (:mod:`groupcoord.server.record_batches`), then queued on the topic's
group commit (:class:`~groupcoord.server.topic_data.TopicWriter`). With acks 1 or -1 the answer waits until every
batch is durable in its Delta table: that commit is this log's local append, which a Kafka leader also completes
before it answers whatever ``timeout_ms`` says (the timeout only bounds waiting for followers, and there are none). A
commit that keeps losing to other writers ends with REQUEST_TIMED_OUT after ``topics.commit.timeout.ms``. acks 0 gets
no answer at all, and a refused batch then closes the connection, which is how Kafka tells an acks-0 producer. A
request with a transactional id is refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED: this endpoint has no
transaction coordinator.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from concurrent.futures import Future
from typing import Any

from kafka.protocol.producer import ProduceResponse

from groupcoord.protocol.errors import ErrorCode, Errors
from groupcoord.server.api import RequestContext
from groupcoord.server.codec import CloseConnection
from groupcoord.server.record_batches import BatchRejected, read_produce_batch
from groupcoord.server.topic_data import TopicWriter
from groupcoord.topics.appender import AppendResult, after_results
from groupcoord.topics.errors import TopicError
from groupcoord.topics.producer_state import NO_PRODUCER_ID, ProducerIdAllocator

log = logging.getLogger("groupcoord.server.adapters.produce")

_ACKS = (0, 1, -1)
_NONE = -1
_Topic = ProduceResponse.TopicProduceResponse
_Partition = _Topic.PartitionProduceResponse

Outcome = Future[AppendResult] | ErrorCode


class ProduceAdapter:
    """Answers Produce through a :class:`TopicWriter`."""

    def __init__(self, writer: TopicWriter) -> None:
        self._writer = writer
        self._wakeups: _Wakeups | None = None

    async def handle(self, ctx: RequestContext) -> Any:
        """Queue every partition's batch; answer once they are durable (``None``, no answer, for acks 0)."""
        body = ctx.body
        if body.transactional_id is not None:
            return self.error_response(ctx, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        if body.acks not in _ACKS:
            return self.error_response(ctx, Errors.INVALID_REQUIRED_ACKS)
        outcomes: dict[str, list[tuple[int, Outcome]]] = {}
        for topic in body.topic_data:
            for partition in topic.partition_data:
                outcomes.setdefault(topic.name, []).append((partition.index, self._submit(ctx, topic.name,
                                                                                           partition)))
        if body.acks == 0:
            refused = [_error_now(o) for parts in outcomes.values() for _, o in parts]
            first = next((error for error in refused if error is not None), None)
            if first is not None:
                raise CloseConnection(f"acks=0 produce refused with {first.name}")
            return None
        waiting = [o for parts in outcomes.values() for _, o in parts if isinstance(o, Future) and not o.done()]
        if waiting:
            await self._wakeups_of(asyncio.get_running_loop()).all_done(waiting)
        return ctx.response(
            responses=[_Topic(name=name, partition_responses=[_answer(index, o) for index, o in parts])
                       for name, parts in outcomes.items()],
            throttle_time_ms=0,
        )

    def _wakeups_of(self, loop: asyncio.AbstractEventLoop) -> _Wakeups:
        if self._wakeups is None or self._wakeups.loop is not loop:
            self._wakeups = _Wakeups(loop)
        return self._wakeups

    def _submit(self, ctx: RequestContext, topic: str, partition: Any) -> Outcome:
        try:
            batch = read_produce_batch(partition.records, api_version=ctx.api_version)
        except BatchRejected as exc:
            log.info("refused a batch for %s-%d from %s: %s", topic, partition.index, ctx.client_id, exc)
            return exc.error
        return self._writer.append(topic, partition.index, batch.records, producer=batch.producer)

    def error_response(self, ctx: RequestContext, error: ErrorCode) -> Any:
        """``error`` for every partition of the request. NOT_COORDINATOR (the endpoint stepping down) is answered as
        NOT_LEADER_OR_FOLLOWER, what a Kafka broker that stopped leading the partition answers."""
        if error is Errors.NOT_COORDINATOR:
            error = Errors.NOT_LEADER_OR_FOLLOWER
        return ctx.response(
            responses=[_Topic(name=t.name, partition_responses=[_answer(p.index, error) for p in t.partition_data])
                       for t in ctx.body.topic_data],
            throttle_time_ms=0,
        )


def _error_now(outcome: Outcome) -> ErrorCode | None:
    """The error of a batch refused before its commit (a bad batch, an unknown partition), else ``None``."""
    if isinstance(outcome, ErrorCode):
        return outcome
    if outcome.done() and outcome.exception() is not None:
        return _error_of(outcome.exception())
    return None


def _error_of(failure: BaseException | None) -> ErrorCode:
    """The Kafka error a failed append answers with (a topic error carries its own)."""
    return failure.error if isinstance(failure, TopicError) else Errors.UNKNOWN_SERVER_ERROR


class _Wakeups:
    """Resolves waiters of one event loop from committer threads with one wake-up of the loop per commit
    (:func:`~groupcoord.topics.appender.after_results`): a topic's commit answers every request it holds at once,
    and a wake-up per future (what ``asyncio.wrap_future`` costs) took an eighth of the committer thread's time at
    5,000 records/s."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._lock = threading.Lock()
        self._due: list[asyncio.Future[None]] = []

    async def all_done(self, futures: list[Future[AppendResult]]) -> None:
        """Wait (on :attr:`loop`) until every one of ``futures`` is done."""
        waiter: asyncio.Future[None] = self.loop.create_future()
        remaining = [len(futures)]
        lock = threading.Lock()

        def one_done(_: Future[AppendResult]) -> None:
            with lock:
                remaining[0] -= 1
                last = remaining[0] == 0
            if last:
                self._resolve_soon(waiter)

        for future in futures:
            future.add_done_callback(one_done)
        await waiter

    def _resolve_soon(self, waiter: asyncio.Future[None]) -> None:
        with self._lock:
            first = not self._due
            self._due.append(waiter)
        if first:
            after_results(self._wake)

    def _wake(self) -> None:
        if not self.loop.is_closed():  # a closed loop has no one left to answer (as asyncio.wrap_future)
            self.loop.call_soon_threadsafe(self._resolve_due)

    def _resolve_due(self) -> None:
        with self._lock:
            due, self._due = self._due, []
        for waiter in due:
            if not waiter.done():  # its request may have been cancelled meanwhile (the connection closed)
                waiter.set_result(None)


def _answer(index: int, outcome: Outcome) -> Any:
    if isinstance(outcome, ErrorCode):
        return _partition(index, outcome)
    if outcome.exception() is not None:
        return _partition(index, _error_of(outcome.exception()))
    result = outcome.result()
    return _partition(index, Errors.NONE, base_offset=result.base_offset, log_start_offset=result.log_start_offset)


def _partition(index: int, error: ErrorCode, *, base_offset: int = _NONE, log_start_offset: int = _NONE) -> Any:
    return _Partition(index=index, error_code=error.code, base_offset=base_offset, log_append_time_ms=_NONE,
                      log_start_offset=log_start_offset, record_errors=[], error_message=None)


class InitProducerIdAdapter:
    """Gives idempotent producers a new producer id at epoch 0 (Kafka's answer without a transactional id)."""

    def __init__(self, allocator: ProducerIdAllocator) -> None:
        self._allocator = allocator

    async def handle(self, ctx: RequestContext) -> Any:
        """A fresh producer id, or TRANSACTIONAL_ID_AUTHORIZATION_FAILED for a transactional producer."""
        if ctx.body.transactional_id is not None:
            return self.error_response(ctx, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        return ctx.response(throttle_time_ms=0, error_code=Errors.NONE.code, producer_id=self._allocator.next_id(),
                            producer_epoch=0)

    def error_response(self, ctx: RequestContext, error: ErrorCode) -> Any:
        """``error`` with no producer id."""
        return ctx.response(throttle_time_ms=0, error_code=error.code, producer_id=NO_PRODUCER_ID,
                            producer_epoch=_NONE)
