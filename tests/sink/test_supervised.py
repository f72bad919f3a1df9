"""The tests' query supervisor restarts a query only for Spark's Python-worker timeout (no Spark needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import StreamingQueryException

from tests.sink.supervised import MAX_RESTARTS, WORKER_TIMEOUT, SupervisedQuery


class FakeQuery:
    """A query that failed with ``error`` (None: still running, then finishes when awaited)."""

    def __init__(self, error: str | None) -> None:
        self.error = StreamingQueryException(message=error) if error else None
        self.isActive = error is None
        self.name = "q"
        self.recentProgress: list[dict[str, Any]] = [{"batchId": 0}]

    def exception(self) -> StreamingQueryException | None:
        return self.error

    def awaitTermination(self, timeout: int | None = None) -> bool:
        if self.error is not None:
            raise self.error
        return True


def _starts(*errors: str | None) -> Any:
    queries = iter([FakeQuery(error) for error in errors])
    return lambda: next(queries)


def test_a_query_starved_of_its_python_worker_is_restarted_and_keeps_its_progress() -> None:
    query = SupervisedQuery(_starts(f"SparkException: {WORKER_TIMEOUT}.", None))
    assert query.awaitTermination(5) is True
    assert query.restarts == 1 and len(query.recentProgress) == 2


def test_a_query_whose_sink_cannot_recover_starts_over_without_its_checkpoint(tmp_path: Path) -> None:
    checkpoint = tmp_path / "ckpt"
    (checkpoint / "offsets").mkdir(parents=True)
    query = SupervisedQuery(_starts(WORKER_TIMEOUT, None), discard_checkpoint=checkpoint)
    assert query.awaitTermination(5) is True
    assert not checkpoint.exists()


def test_any_other_failure_is_raised_and_a_stopped_query_fails_the_wait() -> None:
    query = SupervisedQuery(_starts("the table at /t has other columns than the stream"))
    with pytest.raises(StreamingQueryException, match="other columns"):
        query.awaitTermination(5)
    with pytest.raises(AssertionError, match="query q stopped: the table"):
        query.check_alive()
    assert query.restarts == 0


def test_restarts_stop_after_the_limit() -> None:
    query = SupervisedQuery(_starts(*[WORKER_TIMEOUT] * (MAX_RESTARTS + 1)))
    with pytest.raises(StreamingQueryException, match=WORKER_TIMEOUT):
        query.awaitTermination(5)
    assert query.restarts == MAX_RESTARTS
