"""The commit batcher: batching, the commit-rate cap, and failure classification, on real logs."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TypeVar

import pytest

from groupcoord.log.base import LogFencedError, StorageUnavailableError
from groupcoord.log.batcher import BatcherClosedError, BatcherConfig, CommitBatcher
from groupcoord.log.delta import DeltaRecordLog
from groupcoord.log.memory import InMemoryRecordLog
from tests.log.storage_helpers import FaultyLog, offset

T = TypeVar("T")
FAST = BatcherConfig(linger_ms=1, min_commit_interval_ms=0, retry_backoff_ms=5, retry_backoff_max_ms=20)


def run(main: Callable[[], Awaitable[T]]) -> T:
    async def wrapped() -> T:
        return await asyncio.wait_for(main(), timeout=30)

    return asyncio.run(wrapped())


def test_writes_arriving_during_a_commit_form_the_next_batch() -> None:
    log = FaultyLog(InMemoryRecordLog(), delay=0.2)

    async def main() -> list[int]:
        batcher = CommitBatcher(log, version=-1, config=FAST)
        first = asyncio.ensure_future(batcher.append([offset("g", 0, 0)]))
        await asyncio.sleep(0.05)  # the first commit is now in flight
        rest = [asyncio.ensure_future(batcher.append([offset("g", p, 1)])) for p in range(10)]
        versions = [await first, *await asyncio.gather(*rest)]
        await batcher.close()
        return versions

    versions = run(main)
    assert versions == [0] + [1] * 10
    assert log.batch_sizes == [1, 10]
    assert log.inner.load().records == (offset("g", 0, 0), *(offset("g", p, 1) for p in range(10)))


def test_commits_start_no_sooner_than_the_minimum_interval_apart() -> None:
    log = FaultyLog(InMemoryRecordLog())
    config = BatcherConfig(linger_ms=1, min_commit_interval_ms=50)

    async def main() -> float:
        batcher = CommitBatcher(log, version=-1, config=config)
        waiters = []
        started = asyncio.get_running_loop().time()
        for n in range(30):
            waiters.append(asyncio.ensure_future(batcher.append([offset("g", n, n)])))
            await asyncio.sleep(0.01)
        await asyncio.gather(*waiters)
        elapsed = asyncio.get_running_loop().time() - started
        await batcher.close()
        return elapsed

    elapsed = run(main)
    starts = log.commit_starts
    # 30 writes over ~300 ms (longer on a loaded machine): at most one commit per 50 ms of the writing time.
    assert len(starts) <= int(elapsed / 0.05) + 1
    assert len(starts) < 30
    # Measured in the executor thread: one late dispatch shortens the next gap, so check the mean gap, which
    # dispatch jitter cannot shrink below the interval.
    assert (starts[-1] - starts[0]) / (len(starts) - 1) >= 0.045
    assert sum(log.batch_sizes) == 30


def test_a_lone_write_waits_for_the_linger_before_its_commit() -> None:
    log = FaultyLog(InMemoryRecordLog())

    async def main() -> float:
        batcher = CommitBatcher(log, version=-1, config=BatcherConfig(linger_ms=40, min_commit_interval_ms=0))
        started = asyncio.get_running_loop().time()
        await batcher.append([offset("g", 0, 1)])
        await batcher.close()
        return started

    started = run(main)
    assert log.commit_starts[0] - started >= 0.039


def test_fenced_batcher_fails_every_waiter_and_stops() -> None:
    inner = InMemoryRecordLog()
    log = FaultyLog(inner, delay=0.1)

    async def main() -> tuple[Sequence[BaseException | int], CommitBatcher]:
        batcher = CommitBatcher(log, version=-1, config=FAST)
        inner.append([offset("rival", 0, 1)], expected_version=-1)  # another coordinator wrote
        in_flight = asyncio.ensure_future(batcher.append([offset("g", 0, 1)]))
        await asyncio.sleep(0.05)
        queued = asyncio.ensure_future(batcher.append([offset("g", 1, 1)]))
        outcomes = await asyncio.gather(in_flight, queued, return_exceptions=True)
        with pytest.raises(LogFencedError):
            await batcher.append([offset("g", 2, 1)])
        return outcomes, batcher

    outcomes, batcher = run(main)
    assert all(isinstance(o, LogFencedError) for o in outcomes)
    assert batcher.fenced is not None and not batcher.healthy
    assert inner.load().records == (offset("rival", 0, 1),)


def test_storage_failure_fails_the_batch_waiters_then_retries_it_exactly_once() -> None:
    log = FaultyLog(InMemoryRecordLog())
    log.fail_before = 2

    async def main() -> tuple[BaseException | int, bool, int]:
        batcher = CommitBatcher(log, version=-1, config=FAST)
        failed = await asyncio.gather(batcher.append([offset("g", 0, 1)]), return_exceptions=True)
        unhealthy = not batcher.healthy
        later = await batcher.append([offset("g", 1, 1)])
        assert batcher.healthy
        await batcher.close()
        return failed[0], unhealthy, later

    failed, unhealthy, later = run(main)
    assert isinstance(failed, StorageUnavailableError)
    assert unhealthy
    assert later == 1
    assert log.inner.load().records == (offset("g", 0, 1), offset("g", 1, 1))


def test_a_batch_durable_despite_the_error_is_not_committed_twice() -> None:
    log = FaultyLog(InMemoryRecordLog())
    log.fail_after = 1
    log.fail_reads = 2  # and the first looks at the log fail too

    async def main() -> tuple[BaseException | int, int]:
        batcher = CommitBatcher(log, version=-1, config=FAST)
        failed = await asyncio.gather(batcher.append([offset("g", 0, 1)]), return_exceptions=True)
        later = await batcher.append([offset("g", 1, 1)])
        await batcher.close()
        return failed[0], later

    failed, later = run(main)
    assert isinstance(failed, StorageUnavailableError)
    assert later == 1
    assert log.inner.load().records == (offset("g", 0, 1), offset("g", 1, 1))
    assert log.batch_sizes == [1, 1]  # one attempt each: the durable batch was found, not re-sent


def test_another_writer_during_a_storage_outage_fences_the_batcher() -> None:
    inner = InMemoryRecordLog()
    log = FaultyLog(inner)
    log.fail_before = 1

    async def main() -> BaseException | int:
        batcher = CommitBatcher(log, version=-1, config=BatcherConfig(linger_ms=0, min_commit_interval_ms=0,
                                                                      retry_backoff_ms=100))
        first = await asyncio.gather(batcher.append([offset("g", 0, 1)]), return_exceptions=True)
        assert isinstance(first[0], StorageUnavailableError)
        inner.append([offset("rival", 0, 1)], expected_version=-1)
        outcome = await asyncio.gather(batcher.append([offset("g", 1, 1)]), return_exceptions=True)
        assert batcher.fenced is not None
        return outcome[0]

    assert isinstance(run(main), LogFencedError)
    assert inner.load().records == (offset("rival", 0, 1),)


def test_snapshot_shares_its_commit_with_the_writes_queued_ahead_of_and_behind_it() -> None:
    log = FaultyLog(InMemoryRecordLog(), delay=0.05)

    async def main() -> list[int]:
        batcher = CommitBatcher(log, version=-1, config=FAST)
        a = asyncio.ensure_future(batcher.append([offset("g", 0, 1)]))
        await asyncio.sleep(0.02)
        b = asyncio.ensure_future(batcher.append([offset("g", 1, 1)]))
        snap = asyncio.ensure_future(batcher.snapshot([offset("g", 0, 1), offset("g", 1, 1)]))
        c = asyncio.ensure_future(batcher.append([offset("g", 2, 1)]))
        versions = list(await asyncio.gather(a, b, snap, c))
        await batcher.close()
        return versions

    # One commit after the write in flight: the snapshot, then the write queued ahead of it and the one behind it.
    assert run(main) == [0, 1, 1, 1]
    loaded = log.inner.load()
    assert loaded.records == (offset("g", 0, 1), offset("g", 1, 1), offset("g", 1, 1), offset("g", 2, 1))
    assert loaded.tail_records == 2
    assert {r.key: r.value for r in loaded.compacted().records} == {
        r.key: r.value for r in (offset("g", 0, 1), offset("g", 1, 1), offset("g", 2, 1))}


def test_close_without_drain_fails_queued_writes() -> None:
    log = FaultyLog(InMemoryRecordLog(), delay=0.1)

    async def main() -> tuple[BaseException | int, ...]:
        batcher = CommitBatcher(log, version=-1, config=FAST)
        first = asyncio.ensure_future(batcher.append([offset("g", 0, 1)]))
        await asyncio.sleep(0.03)
        queued = asyncio.ensure_future(batcher.append([offset("g", 1, 1)]))
        await batcher.close(drain=False)
        return tuple(await asyncio.gather(first, queued, return_exceptions=True))

    first, queued = run(main)
    assert first == 0
    assert isinstance(queued, BatcherClosedError)


def test_many_concurrent_committers_through_the_delta_log(tmp_path: Path) -> None:
    log = DeltaRecordLog(tmp_path / "log")
    version = log.takeover(1, expected_version=-1)

    async def main() -> tuple[list[int], int]:
        batcher = CommitBatcher(log, version=version, config=BatcherConfig(linger_ms=5, min_commit_interval_ms=20))

        async def committer(member: int) -> list[int]:
            acks = []
            for n in range(10):
                acks.append(await batcher.append([offset(f"g{member % 5}", member, n)]))
            return acks

        acks = await asyncio.gather(*(committer(m) for m in range(50)))
        snap = await batcher.snapshot([offset(f"g{m % 5}", m, 9) for m in range(50)])
        await batcher.close()
        return [v for member in acks for v in member], snap

    acks, snap = run(main)
    assert len(acks) == 500 and min(acks) > version
    reloaded = DeltaRecordLog(tmp_path / "log").load()
    assert reloaded.version == snap and reloaded.epoch == 1
    assert sorted(r.key for r in reloaded.records) == sorted(f"g{m % 5}/t/{m}" for m in range(50))
    history = DeltaRecordLog(tmp_path / "log").batch_ids_after(version)
    assert len(history) < 100  # 500 writes, batched
    assert all(tag is not None and tag.startswith("1-") for tag in history.values())
