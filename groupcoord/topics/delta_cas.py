"""Conditional (compare-and-set) Delta commits with a re-read-and-retry loop, shared by the catalog and topic logs.

Every write here is a commit at the version after the one the writer last read: through delta-rs with
``max_commit_retries=0`` (the catalog), or through :mod:`groupcoord.storage.files` (a topic log's produce). Nothing
may retry blindly on our behalf, because the data of a retried commit (the offsets of a produce, the whole catalog)
was computed from the state at that version. When the commit loses (``CommitFailedError`` or
:class:`~groupcoord.storage.files.CommitConflictError`: the version exists), the writer re-reads the table and
recomputes its commit from the new state.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from deltalake import CommitProperties, DeltaTable
from deltalake.exceptions import CommitFailedError

from groupcoord.storage.files import CommitConflictError
from groupcoord.topics.errors import RequestTimedOutError

log = logging.getLogger("groupcoord.topics.delta_cas")

T = TypeVar("T")

_MAX_BACKOFF_FACTOR = 50


def cas_commit_properties(**metadata: str) -> CommitProperties:
    """Commit properties for one conditional commit: no blind retries, and ``metadata`` in the commit info."""
    return CommitProperties(max_commit_retries=0, custom_metadata=metadata or None)


@dataclass(frozen=True, kw_only=True)
class RetryPolicy:
    """How a writer retries a lost conditional commit: exponential backoff with jitter, until a deadline."""

    backoff_ms: int = 5
    timeout_ms: int = 60000

    def delay_s(self, attempt: int) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based): full jitter over a doubling cap."""
        cap = self.backoff_ms * min(2 ** (attempt - 1), _MAX_BACKOFF_FACTOR)
        return random.uniform(self.backoff_ms, max(cap, self.backoff_ms)) / 1000.0


@dataclass(frozen=True)
class CasOutcome(Generic[T]):
    """What a successful conditional commit returned, with the version it created and the attempts it took."""

    value: T
    version: int
    attempts: int


def commit_with_retry(
    table: DeltaTable, attempt: Callable[[DeltaTable], T], *, policy: RetryPolicy, what: str
) -> CasOutcome[T]:
    """Run ``attempt(table)`` until its conditional commit wins; return its value and the new table version.

    ``attempt`` must read everything it needs from ``table`` at its current version and commit conditionally on it
    (delta-rs with :func:`cas_commit_properties`, or :func:`groupcoord.storage.files.commit_actions`). It may raise
    a domain error (duplicate topic...) after a re-read; that error propagates unchanged. After each lost commit the
    table is re-read (``update_incremental``) before the retry.
    """
    deadline = time.monotonic() + policy.timeout_ms / 1000.0
    attempts = 0
    while True:
        attempts += 1
        try:
            value = attempt(table)
            return CasOutcome(value, table.version(), attempts)
        except (CommitFailedError, CommitConflictError):
            if time.monotonic() >= deadline:
                raise RequestTimedOutError(
                    f"Gave up {what} after {attempts} conditional commits lost to concurrent writers."
                ) from None
            delay = policy.delay_s(attempts)
            log.debug("%s: commit at version %d lost, retrying in %.1f ms", what, table.version(), delay * 1000)
            time.sleep(delay)
            table.update_incremental()
