"""Server-side assignment batching: every effect of one kind and one moment goes to its runner in one call.

Two queues of the same kind serve a holder: ``NeedsAssignment`` of classic ``server-*`` groups, and
``NeedsTargetAssignment`` of consumer groups (KIP-848). The runners (for example
:func:`groupcoord.assignment.runner.spark_assignment_runner` and its ``targets``) are passed in from outside: the
runtime never imports Spark. While a call runs, new effects queue; the next call takes them all, keeping only the
newest generation (or group epoch) of each group (:func:`~groupcoord.coordinator.effects.newest_per_group`).
Answers go back to the core through ``complete``, which applies them on the loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic

from groupcoord.coordinator.effects import (
    CompleteAssignment,
    CompleteTargetAssignment,
    E,
    Effect,
    EffectAnswer,
    NeedsAssignment,
    NeedsTargetAssignment,
    newest_per_group,
)
from groupcoord.protocol.errors import Errors

log = logging.getLogger("groupcoord.runtime.assignments")

AssignmentRunner = Callable[[Sequence[NeedsAssignment]], Awaitable[Sequence[CompleteAssignment]]]
"""Computes server-side assignments for every pending group in one call (a batched Spark job)."""

TargetAssignmentRunner = Callable[[Sequence[NeedsTargetAssignment]], Awaitable[Sequence[CompleteTargetAssignment]]]
"""Computes consumer groups' target assignments for every pending group in one call."""


class AssignmentQueue(Generic[E]):
    """Queues the effects of one kind (``kind``) and runs them in batches through ``runner``.

    Without a runner every group gets INCONSISTENT_GROUP_PROTOCOL (``serve --no-spark``); a runner that raises gives
    every group of its batch UNKNOWN_SERVER_ERROR. ``complete(answer)`` hands an answer to the core; ``stopped()``
    tells the queue to drop answers (the holder stopped serving meanwhile).
    """

    def __init__(self, runner: Callable[[Sequence[E]], Awaitable[Sequence[EffectAnswer]]] | None, *, kind: type[E],
                 complete: Callable[[EffectAnswer], None], stopped: Callable[[], bool]) -> None:
        self._runner: Callable[[Sequence[E]], Awaitable[Sequence[EffectAnswer]]] | None = runner
        self._kind: type[E] = kind
        self._complete = complete
        self._stopped = stopped
        self._pending: list[E] = []
        self._task: asyncio.Task[None] | None = None

    def on_effects(self, effects: Sequence[Effect]) -> None:
        """Queue the effects of this queue's kind; everything pending at the same moment goes into one call."""
        self._pending.extend(e for e in effects if isinstance(e, self._kind))
        if self._pending and (self._task is None or self._task.done()):
            self._task = asyncio.create_task(self._run(), name=f"server-side-{self._kind.__name__}")

    async def _run(self) -> None:
        while self._pending:
            await asyncio.sleep(0)  # let effects of the same moment join this batch
            batch, self._pending = newest_per_group(self._pending), []
            answers = await self._answers(batch)
            if self._stopped():
                return
            for answer in answers:
                self._complete(answer)

    async def _answers(self, batch: Sequence[E]) -> Sequence[EffectAnswer]:
        if self._runner is None:
            log.warning("refusing server-side assignment for %d group(s): no Spark (serve --no-spark)", len(batch))
            return [effect.failed(Errors.INCONSISTENT_GROUP_PROTOCOL) for effect in batch]
        try:
            answers: Sequence[EffectAnswer] = await self._runner(batch)
            return answers
        except Exception:
            log.exception("server-side assignment of %d group(s) failed", len(batch))
            return [effect.failed(Errors.UNKNOWN_SERVER_ERROR) for effect in batch]

    def cancel(self) -> None:
        """Cancel a call under way (the term is ending)."""
        if self._task is not None:
            self._task.cancel()

