"""The group commit both logs write through: batches, linger, the commit-rate cap, the record cap, close and stop,
with the thread runner (the topic logs') and the event-loop runner (the record log's)."""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field

import pytest

from groupcoord.storage.group_commit import GroupCommit, GroupCommitClosedError, run_in_thread, run_on_loop


@dataclass(eq=False)
class Write:
    name: str
    size: int = 1
    arrived: float = field(default_factory=time.monotonic)


class Log:
    """Records every batch and when its commit started; each commit takes ``delay`` seconds."""

    def __init__(self, delay: float = 0.0, fail_on: str | None = None) -> None:
        self.delay = delay
        self.fail_on = fail_on
        self.batches: list[list[str]] = []
        self.starts: list[float] = []
        self.failed: list[tuple[list[str], str]] = []
        self.committed = threading.Event()

    def commit(self, batch: list[Write]) -> None:
        self.starts.append(time.monotonic())
        time.sleep(self.delay)
        if any(w.name == self.fail_on for w in batch):
            raise RuntimeError(f"fenced at {self.fail_on}")
        self.batches.append([w.name for w in batch])
        self.committed.set()

    def fail(self, writes: list[Write], exc: BaseException) -> None:
        self.failed.append(([w.name for w in writes], str(exc)))


class Running:
    """A group commit and its committer thread."""

    def __init__(self, log: Log, *, linger_s: float = 0.001, min_interval_s: float = 0.0,
                 max_records: int | None = None) -> None:
        self.group: GroupCommit[Write] = GroupCommit("test-commit", linger_s=linger_s, min_interval_s=min_interval_s,
                                                     max_records=max_records)
        self.thread = run_in_thread(self.group, log.commit, fail=log.fail)

    def submit(self, write: Write) -> None:
        self.group.submit(write)

    def close(self, *, drain: bool = True) -> list[Write]:
        return self.group.close(drain=drain)

    def join(self, timeout: float) -> None:
        self.thread.join(timeout)


def group(log: Log, *, linger_s: float = 0.001, min_interval_s: float = 0.0,
          max_records: int | None = None) -> Running:
    return Running(log, linger_s=linger_s, min_interval_s=min_interval_s, max_records=max_records)


def test_writes_arriving_during_a_commit_form_the_next_batch() -> None:
    log = Log(delay=0.2)
    commits = group(log)
    commits.submit(Write("a"))
    time.sleep(0.05)  # "a" is in flight now
    for name in "bcd":
        commits.submit(Write(name))
    commits.close()
    commits.join(10)
    assert log.batches == [["a"], ["b", "c", "d"]]
    assert not commits.thread.is_alive()


def test_a_lone_write_waits_for_the_linger() -> None:
    log = Log()
    commits = group(log, linger_s=0.05)
    submitted = time.monotonic()
    commits.submit(Write("a"))
    assert log.committed.wait(10)
    assert log.starts[0] - submitted >= 0.049
    commits.close()


def test_commits_start_no_sooner_than_the_minimum_interval_apart() -> None:
    log = Log()
    commits = group(log, min_interval_s=0.05)
    for n in range(20):
        commits.submit(Write(str(n)))
        time.sleep(0.01)
    commits.close()
    commits.join(10)
    assert sum(len(batch) for batch in log.batches) == 20
    assert len(log.starts) < 20
    gaps = [b - a for a, b in zip(log.starts, log.starts[1:], strict=False)]
    assert all(gap >= 0.049 for gap in gaps[:-1])  # the last commit is the close's: it does not wait


def test_a_batch_holds_at_most_max_records_and_a_larger_write_commits_alone() -> None:
    log = Log(delay=0.1)
    commits = group(log, max_records=5)
    commits.submit(Write("first"))
    time.sleep(0.03)
    for name, size in (("a", 2), ("b", 2), ("c", 2), ("big", 9), ("d", 1)):
        commits.submit(Write(name, size))
    commits.close()
    commits.join(10)
    assert log.batches == [["first"], ["a", "b"], ["c"], ["big"], ["d"]]


def test_close_without_drain_hands_the_queue_back_and_finishes_the_commit_in_flight() -> None:
    log = Log(delay=0.1)
    commits = group(log)
    commits.submit(Write("a"))
    time.sleep(0.03)
    commits.submit(Write("b"))
    dropped = commits.close(drain=False)
    commits.join(10)
    assert [w.name for w in dropped] == ["b"]
    assert log.batches == [["a"]]
    with pytest.raises(GroupCommitClosedError):
        commits.submit(Write("c"))


def test_a_commit_that_raises_stops_the_committer_and_fails_everything_queued() -> None:
    log = Log(delay=0.1, fail_on="a")
    commits = group(log)
    commits.submit(Write("a"))
    time.sleep(0.03)
    commits.submit(Write("b"))
    commits.join(10)
    assert log.failed == [(["a", "b"], "fenced at a")]
    assert isinstance(commits.group.stopped, RuntimeError)
    with pytest.raises(RuntimeError, match="fenced at a"):
        commits.submit(Write("c"))


def test_closing_a_group_that_never_committed_ends_its_thread_at_once() -> None:
    commits = group(Log())
    assert commits.close() == []
    commits.join(1)
    assert not commits.thread.is_alive()


def test_on_the_event_loop_writes_queued_during_a_commit_form_the_next_batch_and_a_raise_stops_it() -> None:
    """The record log's runner: batches close on the loop, commits run off it; a commit that raises stops the
    runner and fails every write not committed."""
    log = Log(fail_on="stop")

    async def main() -> list[list[str]]:
        group: GroupCommit[Write] = GroupCommit("loop-commit", linger_s=0.0, min_interval_s=0.05)

        async def commit(batch: list[Write]) -> None:
            await asyncio.to_thread(log.commit, batch)

        runner = asyncio.create_task(run_on_loop(group, commit, fail=log.fail))
        group.submit(Write("first"))
        await asyncio.sleep(0.02)  # "first" is in flight; the next batch closes 50 ms after it started
        loop = asyncio.get_running_loop()
        for n in range(50):
            loop.call_soon(group.submit, Write(f"w{n}"))
        await asyncio.sleep(0.1)
        group.submit(Write("stop"))
        group.submit(Write("after"))
        await asyncio.wait_for(runner, 10)
        return log.batches

    assert asyncio.run(main()) == [["first"], [f"w{n}" for n in range(50)]]
    assert log.failed == [(["stop", "after"], "fenced at stop")]
