"""Exponential backoff with jitter, for coordinator rediscovery and retries."""

from __future__ import annotations

import random


class Backoff:
    """Delays that start at ``initial_ms`` and double up to ``max_ms``, each with +/-20% jitter."""

    def __init__(self, initial_ms: int, max_ms: int, *, rng: random.Random | None = None) -> None:
        self._initial = initial_ms
        self._max = max(max_ms, initial_ms)
        self._attempts = 0
        self._rng = rng or random.Random()

    def next_ms(self) -> float:
        """The next delay; each call doubles the base until the maximum."""
        base = min(self._max, self._initial * 2 ** min(self._attempts, 30))
        self._attempts += 1
        jittered: float = base * self._rng.uniform(0.8, 1.2)
        return jittered

    def reset(self) -> None:
        """Start again from ``initial_ms`` (after a success)."""
        self._attempts = 0
