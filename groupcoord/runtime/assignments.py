"""Server-side assignment batching: every ``NeedsAssignment`` of one moment goes to the runner in one call.

The runner (for example :func:`groupcoord.assignment.runner.spark_assignment_runner`) is passed in from outside: the
runtime never imports Spark. While a call runs, new effects queue; the next call takes them all, keeping only the
newest generation of each group (:func:`~groupcoord.coordinator.effects.newest_per_group`). Answers go back to the
core through ``complete``, which applies them on the loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

from groupcoord.coordinator.effects import CompleteAssignment, Effect, NeedsAssignment, newest_per_group
from groupcoord.protocol.errors import ErrorCode, Errors

log = logging.getLogger("groupcoord.runtime.assignments")

AssignmentRunner = Callable[[Sequence[NeedsAssignment]], Awaitable[Sequence[CompleteAssignment]]]
"""Computes server-side assignments for every pending group in one call (a batched Spark job)."""


class AssignmentQueue:
    """Queues ``NeedsAssignment`` effects and runs them in batches through ``runner``.

    Without a runner every group gets INCONSISTENT_GROUP_PROTOCOL (``serve --no-spark``); a runner that raises gives
    every group of its batch UNKNOWN_SERVER_ERROR. ``complete(answer)`` hands an answer to the core; ``stopped()``
    tells the queue to drop answers (the holder stopped serving meanwhile).
    """

    def __init__(self, runner: AssignmentRunner | None, *, complete: Callable[[CompleteAssignment], None],
                 stopped: Callable[[], bool]) -> None:
        self._runner = runner
        self._complete = complete
        self._stopped = stopped
        self._pending: list[NeedsAssignment] = []
        self._task: asyncio.Task[None] | None = None

    def on_effects(self, effects: Sequence[Effect]) -> None:
        """Queue the assignments among ``effects``; everything pending at the same moment goes into one call."""
        self._pending.extend(e for e in effects if isinstance(e, NeedsAssignment))
        if self._pending and (self._task is None or self._task.done()):
            self._task = asyncio.create_task(self._run(), name="server-side-assignment")

    async def _run(self) -> None:
        while self._pending:
            await asyncio.sleep(0)  # let effects of the same moment join this batch
            batch, self._pending = newest_per_group(self._pending), []
            answers = await self._answers(batch)
            if self._stopped():
                return
            for answer in answers:
                self._complete(answer)

    async def _answers(self, batch: Sequence[NeedsAssignment]) -> Sequence[CompleteAssignment]:
        if self._runner is None:
            log.warning("refusing server-side assignment for %d group(s): no Spark (serve --no-spark)", len(batch))
            return _failed(batch, Errors.INCONSISTENT_GROUP_PROTOCOL)
        try:
            return await self._runner(batch)
        except Exception:
            log.exception("server-side assignment of %d group(s) failed", len(batch))
            return _failed(batch, Errors.UNKNOWN_SERVER_ERROR)

    def cancel(self) -> None:
        """Cancel a call under way (the term is ending)."""
        if self._task is not None:
            self._task.cancel()


def _failed(batch: Sequence[NeedsAssignment], error: ErrorCode) -> list[CompleteAssignment]:
    return [CompleteAssignment(group_id=e.group_id, generation_id=e.generation_id, error=error) for e in batch]
