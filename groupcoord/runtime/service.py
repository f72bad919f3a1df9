"""The shell around the pure core: one event loop owns the coordinator and releases responses once durable.

The seam to storage is one coroutine, ``persist(records)``, that returns when the records are durable
(:class:`~groupcoord.runtime.writer.DurableWriter` in ``serve``; :func:`~groupcoord.runtime.writer.log_persister` over
an in-memory log in tests). Calls to it must queue in call order, as the commit batcher does, because the service
starts one call per result without waiting for the previous one.

Release rules:

- a result with records: its responses go out after ``persist`` returns; if it fails, they become errors
  (a fenced log gives NOT_COORDINATOR and stops the service from serving; anything else COORDINATOR_NOT_AVAILABLE);
- a result without records waits for the writes started before it (read-your-writes), except a Heartbeat's:
  heartbeats never wait on storage.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from groupcoord.coordinator.clock import SystemClock
from groupcoord.coordinator.effects import Effect
from groupcoord.coordinator.records import Record
from groupcoord.coordinator.result import CoordinatorResult
from groupcoord.group.member import Token
from groupcoord.log.base import LogFencedError, StorageUnavailableError
from groupcoord.protocol.errors import ErrorCode, Errors, ProtocolError
from groupcoord.protocol.requests import GroupRequest, HeartbeatRequest
from groupcoord.protocol.responses import GroupResponse

log = logging.getLogger("groupcoord.runtime.service")

Persist = Callable[[Sequence[Record]], Awaitable[None]]
"""Makes records durable; returns only when they are (raises LogFencedError / StorageUnavailableError)."""

Released = Sequence[tuple[Token, GroupResponse]]
"""``(token, response)`` pairs of one result, released together."""


class CoordinatorCore(Protocol):
    """The core's entry points the service drives: :class:`~groupcoord.coordinator.GroupCoordinator`, or a guard
    around it (:class:`~groupcoord.runtime.guards.WriteGuard`)."""

    def handle(self, request: GroupRequest, now_ms: int, token: Token) -> CoordinatorResult:
        """Handle one request."""

    def advance(self, now_ms: int) -> CoordinatorResult:
        """Fire every timer due at ``now_ms``."""


class RequestFailed(Exception):
    """A request was not answered by the core; the adapter answers with ``error`` instead."""

    def __init__(self, error: ErrorCode) -> None:
        super().__init__(error.name)
        self.error = error


wall_clock_ms = SystemClock().now_ms
"""The runtime's one clock: wall-clock milliseconds since the epoch (persisted timestamps outlive the process)."""


def _no_effects(effects: Sequence[Effect]) -> None:
    log.warning("dropping %d coordinator effect(s): no effect handler is configured", len(effects))


def error_for_persist_failure(exc: BaseException) -> ErrorCode:
    """The error a client gets when its write did not become durable: NOT_COORDINATOR when another coordinator
    wrote the log, else COORDINATOR_NOT_AVAILABLE (retriable: storage may come back)."""
    if isinstance(exc, LogFencedError):
        return Errors.NOT_COORDINATOR
    if not isinstance(exc, StorageUnavailableError):
        log.error("persisting records failed unexpectedly: %r", exc)
    return Errors.COORDINATOR_NOT_AVAILABLE


class CoordinatorService:
    """Owns a core coordinator on the running event loop: submits requests, fires timers, persists records.

    ``submit(request)`` returns the core's response, or raises :class:`RequestFailed`. ``unavailable`` (settable)
    answers every request with that error without consulting the core: the runtime sets
    COORDINATOR_LOAD_IN_PROGRESS while loading and NOT_COORDINATOR once deposed.
    """

    def __init__(
        self,
        coordinator: CoordinatorCore,
        *,
        persist: Persist,
        clock: Callable[[], int] = wall_clock_ms,
        on_effects: Callable[[Sequence[Effect]], None] = _no_effects,
        on_fenced: Callable[[], None] | None = None,
        tick_ms: int = 50,
    ) -> None:
        self.coordinator = coordinator
        self.unavailable: ErrorCode | None = None
        self._persist = persist
        self._clock = clock
        self._on_effects = on_effects
        self._on_fenced = on_fenced
        self._tick_seconds = tick_ms / 1000
        self._waiting: dict[Token, asyncio.Future[GroupResponse]] = {}
        self._next_token = 0
        self._tail: asyncio.Future[None] | None = None
        self._ticker: asyncio.Task[None] | None = None
        self._releases: set[asyncio.Task[None]] = set()

    def availability(self) -> ErrorCode:
        """``Errors.NONE`` while serving, else the error every request gets (for FindCoordinator)."""
        return self.unavailable or Errors.NONE

    async def start(self) -> None:
        """Start firing timers every ``tick_ms``."""
        if self._ticker is None:
            self._ticker = asyncio.create_task(self._tick_forever())

    async def stop(self, error: ErrorCode = Errors.NOT_COORDINATOR) -> None:
        """Stop the timers and answer every waiting request with ``error``."""
        self.unavailable = error
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
            self._ticker = None
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(RequestFailed(error))
        self._waiting.clear()

    async def submit(self, request: GroupRequest) -> GroupResponse:
        """Hand ``request`` to the core and wait for its response (released per the rules above)."""
        if self.unavailable is not None:
            raise RequestFailed(self.unavailable)
        token = self._next_token
        self._next_token += 1
        future: asyncio.Future[GroupResponse] = asyncio.get_running_loop().create_future()
        self._waiting[token] = future
        try:
            result = self.coordinator.handle(request, self._clock(), token)
        except ProtocolError as exc:
            del self._waiting[token]
            raise RequestFailed(exc.error) from None
        except BaseException:
            del self._waiting[token]
            raise
        self.apply(result, urgent=isinstance(request, HeartbeatRequest))
        try:
            return await future
        finally:
            self._waiting.pop(token, None)

    def apply(self, result: CoordinatorResult, *, urgent: bool = False) -> None:
        """Persist a result's records, then release its responses; hand its effects to ``on_effects``.

        Used for every core result: requests, timers, and results the runtime gets from other entry points
        (``complete_assignment``, ``on_metadata_change``). ``urgent`` releases a record-less result at once.
        """
        if result.effects:
            self._on_effects(result.effects)
        if result.records:
            barrier: asyncio.Future[None] | None = asyncio.ensure_future(self._persist(result.records))
            self._tail = barrier
        else:
            barrier = None if urgent else self._tail
        if barrier is None or (barrier.done() and not barrier.cancelled() and barrier.exception() is None):
            self._release(result.responses, None)
            return
        task = asyncio.create_task(self._release_after(barrier, result.responses))
        self._releases.add(task)
        task.add_done_callback(self._releases.discard)

    async def _release_after(self, barrier: asyncio.Future[None], responses: Released) -> None:
        try:
            await asyncio.shield(barrier)
        except Exception as exc:
            error = error_for_persist_failure(exc)
            if error is Errors.NOT_COORDINATOR and self.unavailable is None:
                log.error("the record log was written by another coordinator: stepping down")
                self.unavailable = Errors.NOT_COORDINATOR
                if self._on_fenced is not None:
                    self._on_fenced()
            else:
                log.warning("records not durable (%s): answering %s", exc, error.name)
            self._release(responses, error)
            return
        self._release(responses, None)

    def _release(self, responses: Released, error: ErrorCode | None) -> None:
        for token, response in responses:
            future = self._waiting.pop(token, None)
            if future is None or future.done():
                continue  # its connection went away, or the service stopped
            if error is None:
                future.set_result(response)
            else:
                future.set_exception(RequestFailed(error))

    async def _tick_forever(self) -> None:
        while True:
            await asyncio.sleep(self._tick_seconds)
            if self.unavailable is not None:
                continue
            try:
                self.apply(self.coordinator.advance(self._clock()))
            except Exception:
                log.exception("firing coordinator timers failed")
