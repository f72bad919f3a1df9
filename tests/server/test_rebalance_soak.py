"""The short rebalance soak (issue 16): 10 rounds of leave and rejoin with three kafka-python consumers, with the
coordinator's server-side cooperative-sticky and with kafka-python's own, on one fresh ``serve`` with Spark.

Every round must reach a stable, complete, disjoint and even assignment within 10 s, and no consumer's ``poll`` may
raise. ``make bench-full`` runs the same harness for 100 rounds (``bench/rebalance_soak.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.rebalance_soak import STABLE_TIMEOUT_S, STRATEGIES, soak, start_serve

ROUNDS = 10

pytestmark = [pytest.mark.slow, pytest.mark.integration]


def test_ten_rounds_of_leave_and_rejoin_each_settle_within_ten_seconds(tmp_path: Path) -> None:
    """Both strategies on one server; ``soak`` raises at the first round that misses (naming what it saw)."""
    serve, bootstrap = start_serve(tmp_path / "state", tmp_path / "serve.log")
    try:
        for strategy in STRATEGIES:
            run = soak(bootstrap, strategy, rounds=ROUNDS)
            assert len(run.leave_s) == len(run.rejoin_s) == ROUNDS
            assert max(run.leave_s + run.rejoin_s) <= STABLE_TIMEOUT_S
    finally:
        serve.close()
