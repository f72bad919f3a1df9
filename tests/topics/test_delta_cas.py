"""The conditional-commit loop: a lost commit is re-read and retried, never blindly; a deadline bounds it."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from deltalake.exceptions import CommitFailedError

from groupcoord.storage.tables import open_or_create
from groupcoord.topics.delta_cas import RetryPolicy, cas_commit_properties, commit_with_retry
from groupcoord.topics.errors import RequestTimedOutError

SCHEMA = pa.schema([pa.field("n", pa.int64(), nullable=False)])


def _append_next(table: DeltaTable) -> int:
    """Append the row count as of the version read: correct only if nobody committed in between."""
    n = table.count()
    write_deltalake(table, pa.table({"n": [n]}, schema=SCHEMA), mode="append",
                    commit_properties=cas_commit_properties(test="cas"))
    return n


def test_a_stale_commit_fails_instead_of_being_retried_blindly(tmp_path: Path) -> None:
    open_or_create(tmp_path / "t", SCHEMA)
    stale, fresh = DeltaTable(str(tmp_path / "t")), DeltaTable(str(tmp_path / "t"))
    _append_next(fresh)
    with pytest.raises(CommitFailedError):
        _append_next(stale)
    assert DeltaTable(str(tmp_path / "t")).version() == 1


def test_a_lost_commit_is_recomputed_from_the_re_read_table(tmp_path: Path) -> None:
    open_or_create(tmp_path / "t", SCHEMA)
    stale, fresh = DeltaTable(str(tmp_path / "t")), DeltaTable(str(tmp_path / "t"))
    _append_next(fresh)
    _append_next(fresh)
    outcome = commit_with_retry(stale, _append_next, policy=RetryPolicy(backoff_ms=1), what="test append")
    assert (outcome.value, outcome.version, outcome.attempts) == (2, 3, 2)
    values = sorted(DeltaTable(str(tmp_path / "t")).to_pyarrow_table().column("n").to_pylist())
    assert values == [0, 1, 2]


def test_a_writer_that_keeps_losing_gives_up_with_request_timed_out(tmp_path: Path) -> None:
    open_or_create(tmp_path / "t", SCHEMA)
    always_stale = DeltaTable(str(tmp_path / "t"))
    _append_next(DeltaTable(str(tmp_path / "t")))

    def attempt(_: DeltaTable) -> int:
        return _append_next(always_stale)  # ignores the re-read handle, so it can never win

    with pytest.raises(RequestTimedOutError, match="Gave up test append after") as caught:
        commit_with_retry(DeltaTable(str(tmp_path / "t")), attempt, policy=RetryPolicy(backoff_ms=1, timeout_ms=30),
                          what="test append")
    assert caught.value.error_code == 7


def test_backoff_grows_but_stays_capped() -> None:
    policy = RetryPolicy(backoff_ms=2)
    assert all(0.002 <= policy.delay_s(1) <= 0.002 for _ in range(20))
    assert all(0.002 <= policy.delay_s(30) <= 0.1 for _ in range(50))


def test_open_or_create_is_idempotent_and_keeps_protocol_1_2(tmp_path: Path) -> None:
    first = open_or_create(tmp_path / "t", SCHEMA)
    again = open_or_create(tmp_path / "t", SCHEMA)
    assert first.version() == again.version() == 0
    protocol = again.protocol()
    assert (protocol.min_reader_version, protocol.min_writer_version) == (1, 2)
