"""Heartbeat load generator: many simulated static members over few sockets, in its own process.

``python -m bench.loadgen --bootstrap HOST:PORT --members 10000 --groups 10 --seconds 60`` joins the members
(``--groups`` client-side "range" groups; each group joins in one round, every member on its own short-lived
connection, because a JoinGroup holds its connection until the round completes), then sends one Heartbeat v3 per
member every ``--interval-ms`` over ``--connections`` shared sockets. Heartbeat frames are encoded once per member;
they are written in pipelined bursts, and responses are matched in order (the endpoint answers a connection's
requests in order). The correlation id of each frame is the member's index, which the reader checks.

Stdout carries JSON lines: ``{"event": "steady"}`` when every member has joined and the measured window starts,
``{"event": "window_end"}`` when it ends, then ``{"event": "result", ...}`` with the round-trip percentiles, the
error counts, how many members each group still has (false expiries), and the generator's own CPU time.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import heapq
import json
import resource
import struct
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kafka.protocol.admin import DescribeGroupsRequest
from kafka.protocol.consumer import HeartbeatRequest, JoinGroupRequest, OffsetCommitRequest, SyncGroupRequest
from kafka.protocol.metadata import ApiVersionsRequest

from groupcoord.protocol.consumer_protocol import Subscription, encode_subscription
from groupcoord.protocol.errors import Errors, error_for_code

CLIENT_ID = "loadgen"
EXPIRY_ERRORS = {22: "ILLEGAL_GENERATION", 25: "UNKNOWN_MEMBER_ID", 27: "REBALANCE_IN_PROGRESS"}


class Connection:
    """One Kafka connection answering one request at a time (the endpoint answers in order anyway)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self._correlation_id = 0
        self._lock = asyncio.Lock()

    @classmethod
    async def open(cls, host: str, port: int) -> Connection:
        """Connect to ``host:port``."""
        reader, writer = await asyncio.open_connection(host, port)
        return cls(reader, writer)

    async def request(self, request: Any) -> Any:
        """Send ``request`` (a kafka-python request object) and decode its response."""
        async with self._lock:
            self._correlation_id += 1
            request.with_header(correlation_id=self._correlation_id, client_id=CLIENT_ID)
            self.writer.write(bytes(request.encode(header=True, framed=True)))
            await self.writer.drain()
            payload = await read_payload(self.reader)
        return request.header.get_response_class().decode(payload, header=True)

    async def close(self) -> None:
        """Close the socket."""
        self.writer.close()
        with contextlib.suppress(ConnectionError):
            await self.writer.wait_closed()


async def read_payload(reader: asyncio.StreamReader) -> bytes:
    """One response frame's payload."""
    (size,) = struct.unpack(">i", await reader.readexactly(4))
    return await reader.readexactly(size)


@dataclass
class Membership:
    """What a member needs to heartbeat and commit: its group, ids and generation."""

    group: str
    instance: str
    member_id: str = ""
    generation: int = -1


def subscription_metadata(topics: Sequence[str]) -> bytes:
    """A consumer-protocol subscription to ``topics``."""
    return encode_subscription(Subscription(topics=tuple(topics)))


def join_request(member: Membership, *, session_timeout_ms: int, rebalance_timeout_ms: int, metadata: bytes) -> Any:
    """JoinGroup v5 of a static member."""
    return JoinGroupRequest(
        version=5, group_id=member.group, session_timeout_ms=session_timeout_ms,
        rebalance_timeout_ms=rebalance_timeout_ms, member_id=member.member_id, group_instance_id=member.instance,
        protocol_type="consumer", protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range",
                                                                                       metadata=metadata)])


def sync_request(member: Membership, assignments: dict[str, bytes]) -> Any:
    """SyncGroup v3 (the leader passes every member's assignment, the others none)."""
    return SyncGroupRequest(
        version=3, group_id=member.group, generation_id=member.generation, member_id=member.member_id,
        group_instance_id=member.instance, assignments=[
            SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=a) for m, a in assignments.items()])


def heartbeat_request(member: Membership) -> Any:
    """Heartbeat v3 (not flexible: the error code sits at a fixed offset of the response)."""
    return HeartbeatRequest(version=3, group_id=member.group, generation_id=member.generation,
                            member_id=member.member_id, group_instance_id=member.instance)


def commit_request(member: Membership, topic: str, offsets: dict[int, int]) -> Any:
    """OffsetCommit v8 by a member of the current generation."""
    partition = OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition
    return OffsetCommitRequest(
        version=8, group_id=member.group, generation_id_or_member_epoch=member.generation,
        member_id=member.member_id, group_instance_id=member.instance, topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(name=topic, partitions=[
                partition(partition_index=p, committed_offset=o, committed_leader_epoch=-1, committed_metadata="")
                for p, o in offsets.items()])])


class JoinRoundTimeout(Exception):
    """A join round did not finish in time; the message names the members left waiting and what others got."""


JOIN_RETRY_ERRORS: tuple[type[BaseException], ...] = (JoinRoundTimeout, ConnectionError, asyncio.IncompleteReadError)
"""Failures after which :func:`join_group` simply runs the round again (bounded by its ``attempts``)."""


HEARTBEAT_WHILE_WAITING_S = 0.25
"""How often a member that has synced heartbeats while the rest of its round finishes."""


@dataclass
class RoundState:
    """One join round of one group: where each member is, and the generation each has synced."""

    members: Sequence[Membership]
    synced: dict[str, int] = field(default_factory=dict)
    steps: dict[str, str] = field(default_factory=dict)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def step(self, member: Membership, text: str) -> None:
        """Record what ``member`` is doing now (for the timeout message)."""
        self.steps[member.instance] = text

    def complete(self) -> bool:
        """Every member synced, all in one generation."""
        return len(self.synced) == len(self.members) and len(set(self.synced.values())) == 1

    def story(self) -> str:
        """The unfinished members and their last step, then a tally of the finished ones' generations."""
        waiting = [m for m in self.members if m.instance not in self.synced]
        shown = "; ".join(f"{m.instance}: {self.steps.get(m.instance, 'not started')}" for m in waiting[:5])
        more = f"; and {len(waiting) - 5} more" if len(waiting) > 5 else ""
        tally = collections.Counter(self.synced.values())
        done = ", ".join(f"generation {g} x {n}" for g, n in sorted(tally.items())) or "none"
        return f"{len(waiting)} of {len(self.members)} members unfinished ({shown}{more}); synced: {done}"


async def _member_cycle(connection: Connection, member: Membership, state: RoundState, *, session_timeout_ms: int,
                        rebalance_timeout_ms: int, metadata: bytes, assign: Any) -> int | None:
    """Like a consumer's join loop: JoinGroup, SyncGroup, then heartbeat until the whole round has synced.

    A SyncGroup or Heartbeat answered REBALANCE_IN_PROGRESS means a later member's JoinGroup started a new
    generation: join again. Any other error ends the cycle with that code.
    """
    rebalancing = Errors.REBALANCE_IN_PROGRESS.code
    while True:
        state.synced.pop(member.instance, None)
        state.step(member, "JoinGroup sent, no answer")
        joined = await connection.request(join_request(
            member, session_timeout_ms=session_timeout_ms, rebalance_timeout_ms=rebalance_timeout_ms,
            metadata=metadata))
        if joined.error_code:
            state.step(member, f"JoinGroup answered {error_for_code(joined.error_code).name}")
            return int(joined.error_code)
        member.member_id, member.generation = joined.member_id, joined.generation_id
        assignments: dict[str, bytes] = {}
        if joined.leader == joined.member_id:
            member_ids = [m.member_id for m in joined.members]
            assignments = assign(member_ids) if assign is not None else {m: b"" for m in member_ids}
        state.step(member, f"joined generation {member.generation}; SyncGroup sent, no answer")
        synced = await connection.request(sync_request(member, assignments))
        if synced.error_code == rebalancing:
            continue
        if synced.error_code:
            state.step(member, f"SyncGroup answered {error_for_code(synced.error_code).name}")
            return int(synced.error_code)
        state.synced[member.instance] = member.generation
        state.step(member, f"synced generation {member.generation}, heartbeating")
        state.changed.set()
        outcome = await _heartbeat_until_round_completes(connection, member, state)
        if outcome != rebalancing:
            return outcome


async def _heartbeat_until_round_completes(connection: Connection, member: Membership, state: RoundState) -> int | None:
    """``None`` once the round is complete, else the first error a Heartbeat got (REBALANCE_IN_PROGRESS: rejoin)."""
    while not state.complete():
        state.changed.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(state.changed.wait(), HEARTBEAT_WHILE_WAITING_S)
        if state.complete():
            break
        beat = await connection.request(heartbeat_request(member))
        if beat.error_code:
            state.step(member, f"Heartbeat answered {error_for_code(beat.error_code).name}")
            return int(beat.error_code)
    state.changed.set()
    return None


async def join_round(host: str, port: int, members: Sequence[Membership], *, session_timeout_ms: int,
                     rebalance_timeout_ms: int, metadata: bytes, timeout_s: float, assign: Any = None) -> int | None:
    """Join ``members`` (all of one group), each on its own connection, until all have synced one generation.

    ``assign(member_ids) -> {member_id: assignment bytes}`` is the leader's assignor (default: empty assignments).
    Each member runs a consumer's join loop (:func:`_member_cycle`), so a round whose first members complete a
    generation before the last ones' JoinGroup arrives still converges. Returns ``None`` when every member is in
    one generation, else the first error code the coordinator answered. Raises :class:`JoinRoundTimeout`, naming
    the unfinished members and their last step, when the round takes longer than ``timeout_s``.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    state = RoundState(members)
    opening = [asyncio.ensure_future(Connection.open(host, port)) for _ in members]
    cycles: list[asyncio.Future[int | None]] = []
    try:
        _, unopened = await asyncio.wait(opening, timeout=timeout_s)
        if unopened:
            raise JoinRoundTimeout(f"group {members[0].group}: {len(unopened)} of {len(members)} connections "
                                   f"were not open after {timeout_s:.1f} s")
        cycles = [asyncio.ensure_future(_member_cycle(
            task.result(), member, state, session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=rebalance_timeout_ms, metadata=metadata, assign=assign))
            for task, member in zip(opening, members, strict=True)]
        pending = set(cycles)
        while pending:
            done, pending = await asyncio.wait(pending, timeout=max(0.0, deadline - loop.time()),
                                               return_when=asyncio.FIRST_COMPLETED)
            if not done:
                raise JoinRoundTimeout(f"group {members[0].group}: the join round did not finish in "
                                       f"{timeout_s:.1f} s: {state.story()}")
            for task in done:
                error = task.result()  # a lost connection raises here
                if error is not None:
                    return error
        return None
    finally:
        started: list[asyncio.Future[Any]] = [*opening, *cycles]
        for future in started:
            future.cancel()
        await asyncio.gather(*cycles, return_exceptions=True)
        opened = await asyncio.gather(*opening, return_exceptions=True)
        await asyncio.gather(*(c.close() for c in opened if isinstance(c, Connection)))


async def join_group(host: str, port: int, members: Sequence[Membership], *, attempts: int = 5,
                     **options: Any) -> int:
    """Repeat :func:`join_round` until every member is in one generation; returns the rounds it took.

    A round that ends in an error code, times out or loses a connection is repeated (the members are static, so
    a repeated JoinGroup replaces the waiting one). Raises ``RuntimeError`` with the last round's story after
    ``attempts`` failed rounds.
    """
    last = ""
    for attempt in range(1, attempts + 1):
        try:
            error = await join_round(host, port, members, **options)
        except JOIN_RETRY_ERRORS as exc:
            last = str(exc) or type(exc).__name__
            log_line(f"join round {attempt}/{attempts} failed: {last}")
            continue
        if error is None:
            return attempt
        last = f"the coordinator answered {error_for_code(error).name}"
    raise RuntimeError(f"group {members[0].group}: no complete round in {attempts} attempts; last: {last}")


def log_line(text: str) -> None:
    """A diagnostic line on stderr (stdout carries only the JSON events)."""
    sys.stderr.write(f"loadgen: {text}\n")
    sys.stderr.flush()


@dataclass
class Stats:
    """Round trips and errors; RTTs are kept only while ``measuring``."""

    measuring: bool = False
    sent: int = 0
    answered: int = 0
    answered_in_window: int = 0
    rtts: list[float] = field(default_factory=list)
    errors: collections.Counter[int] = field(default_factory=collections.Counter)
    failed_members: set[int] = field(default_factory=set)
    connections_lost: int = 0
    delayed: int = 0


class HeartbeatLane:
    """One shared socket: sends due heartbeat frames in bursts, matches responses in order.

    Like a Kafka client's heartbeat thread, a member never has two heartbeats in flight: its next one is due one
    interval after the previous was sent, or at once when the previous answer arrives later than that (counted as
    delayed). An overloaded server therefore sees fewer heartbeats and longer round trips, not an endless queue.
    """

    def __init__(self, connection: Connection, interval_s: float, stats: Stats) -> None:
        self.connection = connection
        self.interval_s = interval_s
        self.stats = stats
        self._due: list[tuple[float, int, bytes]] = []
        self._in_flight: collections.deque[tuple[float, float, int, bytes]] = collections.deque()
        self._wakeup = asyncio.Event()
        self.stopped = False

    def add(self, index: int, frame: bytes, first_due: float) -> None:
        """Heartbeat member ``index`` with ``frame`` from ``first_due`` (loop time) on."""
        heapq.heappush(self._due, (first_due, index, frame))
        self._wakeup.set()

    async def send_forever(self) -> None:
        """Write every due frame, then sleep until the next is due; stop if the connection is lost."""
        try:
            await self._send()
        except ConnectionError:
            self.stats.connections_lost += 1

    async def receive_forever(self) -> None:
        """Match each response to the oldest request in flight; stop if the connection is lost."""
        try:
            await self._receive()
        except (ConnectionError, asyncio.IncompleteReadError):
            self.stats.connections_lost += 1

    async def _send(self) -> None:
        loop = asyncio.get_running_loop()
        writer = self.connection.writer
        while not self.stopped:
            if not self._due:
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            now = loop.time()
            burst: list[bytes] = []
            while self._due and self._due[0][0] <= now:
                due, index, frame = heapq.heappop(self._due)
                burst.append(frame)
                self._in_flight.append((now, due, index, frame))
            if burst:
                self.stats.sent += len(burst)
                writer.write(b"".join(burst))
                await writer.drain()
            if not self._due:
                continue  # every member's heartbeat is in flight: wait for an answer to schedule the next
            wait = self._due[0][0] - loop.time()
            if wait > 0:
                self._wakeup.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wakeup.wait(), wait)

    async def _receive(self) -> None:
        loop = asyncio.get_running_loop()
        reader = self.connection.reader
        stats = self.stats
        while True:
            payload = await read_payload(reader)
            sent_at, due, index, frame = self._in_flight.popleft()
            correlation_id, _, error = struct.unpack_from(">iih", payload)
            if correlation_id != index:
                raise RuntimeError(f"response for member {correlation_id} arrived where {index} was expected")
            now = loop.time()
            next_due = due + self.interval_s
            if now > next_due:
                stats.delayed += 1
                next_due = now
            if not self.stopped:
                heapq.heappush(self._due, (next_due, index, frame))
                self._wakeup.set()
            stats.answered += 1
            if stats.measuring:
                stats.rtts.append(now - sent_at)
                stats.answered_in_window += 1
            if error:
                stats.errors[error] += 1
                stats.failed_members.add(index)

    @property
    def in_flight(self) -> int:
        """Requests sent and not yet answered."""
        return len(self._in_flight)


class Probe:
    """An ApiVersions request every 100 ms on its own connection: how responsive the server's event loop is."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self._rtts: list[float] = []

    async def run_forever(self) -> None:
        """Probe until cancelled."""
        try:
            while True:
                started = time.monotonic()
                await self.connection.request(ApiVersionsRequest(version=0))
                self._rtts.append(time.monotonic() - started)
                await asyncio.sleep(0.1)
        finally:
            await self.connection.close()

    def take(self) -> list[float]:
        """The round trips since the last call."""
        rtts, self._rtts = self._rtts, []
        return rtts


MIN_SAMPLES_FOR_P99 = 100
"""The fewest samples a p99 is reported from; below that a result gives the maximum instead (the p99 of a handful of
samples is just their largest, with a name that promises more)."""


def percentile(values: list[float], fraction: float) -> float:
    """The ``fraction`` percentile (nearest rank) in milliseconds, or -1 with no values."""
    if not values:
        return -1.0
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * fraction))] * 1000, 2)


def p99_or_none(values: list[float]) -> float | None:
    """:func:`percentile` 0.99 in milliseconds from at least :data:`MIN_SAMPLES_FOR_P99` values, else ``None`` (a
    result then shows the maximum, ``percentile(values, 1.0)``, in a column of its own)."""
    return percentile(values, 0.99) if len(values) >= MIN_SAMPLES_FOR_P99 else None


def emit(event: str, **fields: Any) -> None:
    """One JSON line on stdout."""
    sys.stdout.write(json.dumps({"event": event, **fields}) + "\n")
    sys.stdout.flush()


def cpu_seconds() -> float:
    """This process's user plus system CPU time."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def run(args: argparse.Namespace) -> dict[str, Any]:
    """Join, heartbeat for the window, then count the members each group still has."""
    host, _, port_text = args.bootstrap.rpartition(":")
    port = int(port_text)
    loop = asyncio.get_running_loop()
    interval = args.interval_ms / 1000
    stats = Stats()
    lanes = [HeartbeatLane(await Connection.open(host, port), interval, stats) for _ in range(args.connections)]
    tasks = [asyncio.create_task(t) for lane in lanes for t in (lane.send_forever(), lane.receive_forever())]
    per_group = args.members // args.groups
    groups = [[Membership(f"load-{g}", f"load-{g}-{k}") for k in range(per_group)] for g in range(args.groups)]
    metadata = subscription_metadata(["load"])
    join_started = time.monotonic()
    index = join_rounds = 0
    probe = Probe(await Connection.open(host, port))
    probe_task = asyncio.create_task(probe.run_forever())
    for wave in range(0, len(groups), args.groups_per_wave):
        rounds = await asyncio.gather(*(
            join_group(host, port, group, attempts=args.join_attempts, session_timeout_ms=args.session_timeout_ms,
                       rebalance_timeout_ms=args.rebalance_timeout_ms, metadata=metadata,
                       timeout_s=args.join_timeout_ms / 1000)
            for group in groups[wave:wave + args.groups_per_wave]))
        join_rounds += sum(rounds)
        for group in groups[wave:wave + args.groups_per_wave]:
            for member in group:
                request = heartbeat_request(member)
                request.with_header(correlation_id=index, client_id=CLIENT_ID)
                # spread first heartbeats over one interval so the load is even
                first = loop.time() + interval * (index % per_group) / per_group
                lanes[index % len(lanes)].add(index, bytes(request.encode(header=True, framed=True)), first)
                index += 1
    join_seconds = time.monotonic() - join_started
    join_probe = probe.take()
    await asyncio.sleep(interval)  # one full round before measuring
    probe.take()
    stats.measuring = True
    cpu_before, window_started = cpu_seconds(), time.monotonic()
    emit("steady", members=index, join_seconds=round(join_seconds, 1))
    sent_before = stats.sent
    await asyncio.sleep(args.seconds)
    stats.measuring = False
    window = time.monotonic() - window_started
    generator_cpu = cpu_seconds() - cpu_before
    sent = stats.sent - sent_before
    crashed = [t.exception() for t in tasks if t.done() and not t.cancelled() and t.exception() is not None]
    if crashed:
        raise RuntimeError(f"a heartbeat lane failed: {crashed[0]!r}") from crashed[0]
    window_probe = probe.take()
    probe_task.cancel()
    emit("window_end")
    for lane in lanes:
        lane.stopped = True
        lane._wakeup.set()
    deadline = time.monotonic() + 10
    while any(lane.in_flight for lane in lanes) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    present = await count_members(host, port, [g[0].group for g in groups])
    for lane in lanes:
        await lane.connection.close()
    return {
        "members": index,
        "groups": args.groups,
        "connections": args.connections,
        "interval_ms": args.interval_ms,
        "session_timeout_ms": args.session_timeout_ms,
        "join_seconds": round(join_seconds, 1),
        "join_rounds": join_rounds,
        "probe_max_ms_during_join": percentile(join_probe, 1.0),
        "probe_max_ms_during_window": percentile(window_probe, 1.0),
        "window_seconds": round(window, 1),
        "heartbeats_in_window": sent,
        "heartbeats_per_s": round(sent / window),
        "answered": stats.answered,
        "answered_in_window": stats.answered_in_window,
        "unanswered": stats.sent - stats.answered,
        "rtt_p50_ms": percentile(stats.rtts, 0.50),
        "rtt_p99_ms": percentile(stats.rtts, 0.99),
        "rtt_p999_ms": percentile(stats.rtts, 0.999),
        "rtt_max_ms": percentile(stats.rtts, 1.0),
        "errors": {EXPIRY_ERRORS.get(code, str(code)): n for code, n in stats.errors.items()},
        "members_with_errors": len(stats.failed_members),
        "connections_lost": stats.connections_lost,
        "heartbeats_delayed": stats.delayed,
        "members_present": sum(present.values()),
        "false_expiries": index - sum(present.values()),
        "generator_cpu_s": round(generator_cpu, 1),
        "generator_cpu_pct": round(100 * generator_cpu / window, 1),
    }


async def count_members(host: str, port: int, groups: list[str]) -> dict[str, int]:
    """Members each group has now (DescribeGroups v3)."""
    connection = await Connection.open(host, port)
    try:
        response = await connection.request(DescribeGroupsRequest(version=3, groups=groups,
                                                                  include_authorized_operations=False))
    finally:
        await connection.close()
    return {g.group_id: len(g.members) for g in response.groups}


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run, print the result line."""
    parser = argparse.ArgumentParser(prog="bench.loadgen", description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True, metavar="HOST:PORT")
    parser.add_argument("--members", type=int, default=10_000)
    parser.add_argument("--groups", type=int, default=10)
    parser.add_argument("--groups-per-wave", type=int, default=2,
                        help="groups joining at once (each member of a joining group holds one connection)")
    parser.add_argument("--connections", type=int, default=8, help="shared heartbeat sockets")
    parser.add_argument("--interval-ms", type=int, default=3000)
    parser.add_argument("--session-timeout-ms", type=int, default=45000)
    parser.add_argument("--rebalance-timeout-ms", type=int, default=60000)
    parser.add_argument("--seconds", type=float, default=60.0, help="length of the measured window")
    parser.add_argument("--join-timeout-ms", type=int, default=30_000,
                        help="longest one group's join round (connect, JoinGroup, SyncGroup) may take")
    parser.add_argument("--join-attempts", type=int, default=5, help="join rounds per group before giving up")
    args = parser.parse_args(argv)
    result = asyncio.run(run(args))
    emit("result", **result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
