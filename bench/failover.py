"""Coordinator killed mid-rebalance: time to recovery with a standby, and no acknowledged commit lost.

Two ``serve`` processes share one state root (the second stands by) with short lease timings. 100 wire members
(:class:`WireMember`: join/sync with a leader-side range assignment, heartbeat every 500 ms, commit offsets of their
partitions, rejoin on REBALANCE_IN_PROGRESS, rediscover the coordinator through the lease table on a lost connection
or NOT_COORDINATOR) form a stable group. One more member joins, which starts a rebalance; while the group is
rebalancing, the holder gets SIGKILL. Recovery is the time from the kill until the standby serves and every member
is in one generation of a Stable group under it. Every commit acknowledged before or after the kill is then
checked against OffsetFetch on the new holder.

:func:`run_failover` is shared by the benchmark (``main``) and the slow fault test
(``tests/host/faults/test_kill_mid_rebalance.py``).
"""

from __future__ import annotations

import asyncio
import itertools
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka.protocol.admin import DescribeGroupsRequest
from kafka.protocol.consumer import OffsetFetchRequest

from bench.loadgen import (
    Connection,
    Membership,
    commit_request,
    heartbeat_request,
    join_request,
    subscription_metadata,
    sync_request,
)
from bench.results_io import write_result
from bench.serve_process import ServeProcess
from groupcoord.log.lease import current_holder
from groupcoord.protocol.consumer_protocol import Assignment, TopicPartitions, decode_assignment, encode_assignment
from groupcoord.state_root import StateRoot
from groupcoord.topics import TopicCatalog

GROUP, TOPIC = "failover", "events"
PARTITIONS = 200
HEARTBEAT_S = 0.5
FAST_LEASE = ("--conf", "lease.timeout.ms=3000", "--conf", "lease.renew.interval.ms=500",
              "--conf", "lease.safety.ms=1000", "--conf", "group.initial.rebalance.delay.ms=1000")
REJOIN_ERRORS = {22, 25, 27}  # ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS
COORDINATOR_ERRORS = {14, 15, 16}  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
_offsets = itertools.count(1)  # one increasing offset sequence for every commit: later acknowledged means larger


class Locator:
    """Finds the lease holder's address (one lease-table read at a time, shared by every member)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = asyncio.Lock()
        self._cached: tuple[float, tuple[str, int] | None] = (0.0, None)

    async def locate(self) -> tuple[str, int] | None:
        """The live holder's ``(host, port)``, or ``None``; re-read at most every 200 ms."""
        async with self._lock:
            read_at, address = self._cached
            if time.monotonic() - read_at > 0.2:
                lease = await asyncio.to_thread(current_holder, self.root)
                address = None
                if lease is not None and lease.live:
                    host, _, port = lease.address.rpartition(":")
                    address = (host, int(port))
                self._cached = (time.monotonic(), address)
            return address


def range_assignment(member_ids: list[str]) -> dict[str, bytes]:
    """Kafka's range assignment of the topic's partitions over ``member_ids`` (sorted), encoded."""
    ordered = sorted(member_ids)
    per, extra = divmod(PARTITIONS, len(ordered))
    result, start = {}, 0
    for i, member in enumerate(ordered):
        count = per + (1 if i < extra else 0)
        partitions = tuple(range(start, start + count))
        start += count
        result[member] = encode_assignment(Assignment(partitions=(TopicPartitions(TOPIC, partitions),)))
    return result


@dataclass
class Ledger:
    """Every commit acknowledged, by partition: the largest acknowledged offset."""

    acknowledged: dict[int, int] = field(default_factory=dict)
    commits: int = 0

    def record(self, offsets: dict[int, int]) -> None:
        """Remember ``offsets`` as acknowledged."""
        self.commits += 1
        for partition, offset in offsets.items():
            self.acknowledged[partition] = max(offset, self.acknowledged.get(partition, 0))


class WireMember:
    """One member with its own connection; :meth:`run` keeps it in the group until ``stop`` is set."""

    def __init__(self, instance: str, locator: Locator, ledger: Ledger) -> None:
        self.membership = Membership(GROUP, instance)
        self.locator = locator
        self.ledger = ledger
        self.connection: Connection | None = None
        self.stable = False
        self.owned: tuple[int, ...] = ()
        self.committing = True

    async def run(self, stop: asyncio.Event) -> None:
        """Join, then heartbeat and commit every 500 ms; follow the error codes like a Kafka client."""
        while not stop.is_set():
            started = time.monotonic()
            try:
                await self._step()
            except (ConnectionError, OSError, asyncio.IncompleteReadError):
                await self._drop_connection()
            await asyncio.sleep(max(0.0, HEARTBEAT_S - (time.monotonic() - started)))
        await self._drop_connection()

    async def _step(self) -> None:
        if self.connection is None:
            address = await self.locator.locate()
            if address is None:
                return
            self.connection = await Connection.open(*address)
        if not self.stable:
            await self._join()
            return
        error = (await self.connection.request(heartbeat_request(self.membership))).error_code
        if error in REJOIN_ERRORS:
            self.stable, self.owned = False, ()  # eager protocol: give up the partitions before rejoining
            if error == 25:
                self.membership.member_id = ""
        elif error in COORDINATOR_ERRORS:
            await self._drop_connection()
        elif error == 0 and self.owned and self.committing:
            await self._commit()

    async def _join(self) -> None:
        assert self.connection is not None
        joined = await self.connection.request(join_request(
            self.membership, session_timeout_ms=10000, rebalance_timeout_ms=20000,
            metadata=subscription_metadata([TOPIC])))
        if joined.error_code in COORDINATOR_ERRORS:
            await self._drop_connection()
            return
        if joined.error_code:
            return
        self.membership.member_id, self.membership.generation = joined.member_id, joined.generation_id
        leader = joined.leader == joined.member_id
        assignments = range_assignment([m.member_id for m in joined.members]) if leader else {}
        synced = await self.connection.request(sync_request(self.membership, assignments))
        if synced.error_code in COORDINATOR_ERRORS:
            await self._drop_connection()
        elif synced.error_code == 0:
            assignment = decode_assignment(synced.assignment) if synced.assignment else None
            self.owned = tuple(p for tp in assignment.partitions for p in tp.partitions) if assignment else ()
            self.stable = True

    async def _commit(self) -> None:
        assert self.connection is not None
        offsets = {p: next(_offsets) for p in self.owned}
        response = await self.connection.request(commit_request(self.membership, TOPIC, offsets))
        if all(p.error_code == 0 for t in response.topics for p in t.partitions):
            self.ledger.record(offsets)

    async def _drop_connection(self) -> None:
        if self.connection is not None:
            await self.connection.close()
            self.connection = None


async def describe(address: tuple[str, int]) -> Any:
    """DescribeGroups v3 of the group, or ``None`` when the coordinator cannot be reached."""
    try:
        connection = await Connection.open(*address)
    except OSError:
        return None
    try:
        response = await connection.request(DescribeGroupsRequest(version=3, groups=[GROUP],
                                                                  include_authorized_operations=False))
        return response.groups[0]
    except (ConnectionError, asyncio.IncompleteReadError):
        return None
    finally:
        await connection.close()


async def fetch_offsets(address: tuple[str, int]) -> dict[int, int]:
    """Committed offsets of every partition (-1 where none), OffsetFetch v7."""
    connection = await Connection.open(*address)
    try:
        response = await connection.request(OffsetFetchRequest(version=7, group_id=GROUP, require_stable=True, topics=[
            OffsetFetchRequest.OffsetFetchRequestTopic(name=TOPIC, partition_indexes=list(range(PARTITIONS)))]))
    finally:
        await connection.close()
    if response.error_code:
        raise RuntimeError(f"OffsetFetch failed with error {response.error_code}")
    return {p.partition_index: p.committed_offset for t in response.topics for p in t.partitions}


@dataclass(frozen=True)
class FailoverOutcome:
    """What one run showed."""

    members: int
    state_at_kill: str
    takeover_s: float
    recovery_s: float | None
    generation_before: int
    generation_after: int
    stable_members_after: int
    commits_acknowledged: int
    partitions_committed: int
    lost_commits: dict[int, tuple[int, int]]  # partition -> (acknowledged, found)


async def _wait_until(condition: Any, timeout: float, step: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await condition():
            return True
        await asyncio.sleep(step)
    return False


async def _run(work: Path, members: int, timeout: float) -> FailoverOutcome:
    root = work / "root"
    # The members commit offsets of TOPIC: serve refuses partitions its catalog lacks, as Kafka does.
    TopicCatalog(StateRoot.open(root, create=True)).create(TOPIC, PARTITIONS)
    holder = ServeProcess(root, *FAST_LEASE, log_path=work / "holder.log")
    standby: ServeProcess | None = None
    stop = asyncio.Event()
    tasks: list[asyncio.Task[None]] = []
    try:
        first = await asyncio.to_thread(holder.wait_ready, 60)
        if first is None:
            raise RuntimeError(f"the first serve did not become ready:\n{holder.log_tail()}")
        standby = ServeProcess(root, *FAST_LEASE, log_path=work / "standby.log")
        if not await _wait_until(lambda: _async_true("standing by" in standby.log_path.read_text()), 60, 0.1):
            raise RuntimeError("the second serve did not stand by")
        locator, ledger = Locator(root), Ledger()
        group = [WireMember(f"m-{i}", locator, ledger) for i in range(members)]
        tasks = [asyncio.create_task(m.run(stop)) for m in group]

        async def all_stable(address: tuple[str, int], expected: list[WireMember]) -> bool:
            described = await describe(address)
            if described is None or described.group_state != "Stable" or len(described.members) != len(expected):
                return False
            generations = {m.membership.generation for m in expected}
            return all(m.stable for m in expected) and len(generations) == 1

        if not await _wait_until(lambda: all_stable(first, group), timeout):
            raise RuntimeError("the first 100 members never became stable")
        generation_before = group[0].membership.generation
        await asyncio.sleep(2.0)  # a few rounds of commits
        newcomer = WireMember(f"m-{members}", locator, ledger)
        group.append(newcomer)
        tasks.append(asyncio.create_task(newcomer.run(stop)))

        seen: list[str] = []

        async def rebalancing() -> bool:
            described = await describe(first)
            if described is None or described.group_state not in ("PreparingRebalance", "CompletingRebalance"):
                return False
            seen.append(described.group_state)
            return True

        if not await _wait_until(rebalancing, 10, 0.02):
            raise RuntimeError("the newcomer did not start a rebalance")
        killed_at = time.monotonic()
        holder.kill()  # at once: the group was rebalancing an instant ago, and a 101-member round takes > 500 ms
        state_at_kill = seen[-1]
        second = await asyncio.to_thread(standby.wait_ready, timeout)
        if second is None:
            raise RuntimeError(f"the standby did not take over:\n{standby.log_tail()}")
        takeover_s = time.monotonic() - killed_at
        recovered = await _wait_until(lambda: all_stable(second, group), timeout)
        recovery_s = time.monotonic() - killed_at if recovered else None
        await asyncio.sleep(1.0)  # commits under the new generation
        for member in group:
            member.committing = False
        await asyncio.sleep(2 * HEARTBEAT_S)  # let commits in flight finish
        found = await fetch_offsets(second)
        lost = {p: (acked, found.get(p, -1)) for p, acked in ledger.acknowledged.items() if found.get(p, -1) < acked}
        return FailoverOutcome(
            members=len(group), state_at_kill=state_at_kill, takeover_s=round(takeover_s, 2),
            recovery_s=round(recovery_s, 2) if recovery_s is not None else None,
            generation_before=generation_before, generation_after=group[0].membership.generation,
            stable_members_after=sum(m.stable for m in group), commits_acknowledged=ledger.commits,
            partitions_committed=len(ledger.acknowledged), lost_commits=lost)
    finally:
        stop.set()
        if tasks:
            await asyncio.wait(tasks, timeout=10)
        holder.close()
        if standby is not None:
            standby.close()


async def _async_true(value: bool) -> bool:
    return value


def run_failover(work: Path, *, members: int = 100, timeout: float = 60.0) -> FailoverOutcome:
    """One kill-mid-rebalance run under ``work`` (state root and logs); bounded by ``timeout`` per phase."""
    return asyncio.run(_run(work, members, timeout))


def main(full: bool) -> None:
    """Run the scenario (5 times in full mode, once quick) and record recovery times."""
    outcomes = []
    for _ in range(5 if full else 1):
        with tempfile.TemporaryDirectory(prefix="groupcoord-failover-") as tmp:
            outcomes.append(run_failover(Path(tmp)))
    rows = [{"members": o.members, "state_at_kill": o.state_at_kill, "takeover_s": o.takeover_s,
             "recovery_s": o.recovery_s, "generation_before": o.generation_before,
             "generation_after": o.generation_after, "commits_acknowledged": o.commits_acknowledged,
             "lost_commits": len(o.lost_commits)} for o in outcomes]
    recoveries = [o.recovery_s for o in outcomes if o.recovery_s is not None]
    print(f"failover: {rows}", flush=True)
    write_result(
        "failover",
        title="Coordinator killed mid-rebalance (100 members + 1 joining): standby takeover and recovery",
        rows=rows,
        summary={"recovery_s_median": statistics.median(recoveries) if recoveries else None,
                 "recovery_s_max": max(recoveries) if recoveries else None,
                 "lost_commits": sum(len(o.lost_commits) for o in outcomes),
                 "lease": "timeout 3 s, renew 500 ms, safety 1 s", "heartbeat_interval_s": HEARTBEAT_S},
        notes="Takeover: SIGKILL of the holder until the standby prints its readiness line (bounded below by lease "
        "expiry + safety margin = 4 s at most after the last renewal). Recovery: SIGKILL until every member is in one "
        "generation of a Stable group on the new holder. Members are bench/failover.py WireMembers (raw Kafka "
        "requests on one connection each, in the benchmark process); 2 shared cores.",
    )
