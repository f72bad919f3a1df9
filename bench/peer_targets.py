"""The two coordinators the peer benchmarks compare, started the same way: Kafka's own (a dev broker) and groupcoord's.

:func:`coordinator` starts a fresh one of either side in a work directory, with the same group settings on both
(``group.*`` keys have the same names in Kafka's ``server.properties`` and in groupcoord's ``--conf``), and yields
its ``(host, port)``. The benchmarks run one side, stop it, then run the other: never both at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka.protocol.admin import DescribeGroupsRequest
from kafka.protocol.metadata import FindCoordinatorRequest

from bench.loadgen import Connection
from bench.serve_process import ServeProcess
from groupcoord.devbroker import PEER_JVM_OPTIONS, KafkaBroker
from groupcoord.state_root import StateRoot
from groupcoord.topics import TopicCatalog

KAFKA = "kafka"
GROUPCOORD = "groupcoord"
SIDES: tuple[str, ...] = (KAFKA, GROUPCOORD)
REPETITIONS = 3
"""Runs per side of a peer comparison: each run starts both sides fresh, the order swapped every run."""
"""The peer first, then groupcoord: each benchmark runs them in this order, one after the other."""

READY_TIMEOUT_S = 180.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PROBE_GROUPS = 64
NOT_READY = {14, 15, 16}
"""COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR: ask again later."""
"""Groups probed before a run: enough to land on every partition of Kafka's ``__consumer_offsets`` (50) in practice."""


@dataclass(frozen=True)
class Endpoint:
    """A running coordinator: which side it is, where clients connect, and its process."""

    side: str
    host: str
    port: int
    pid: int

    def cpu_seconds(self) -> float:
        """User plus system CPU time the coordinator's process used so far (from /proc)."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


@contextlib.contextmanager
def coordinator(side: str, work: Path, settings: Mapping[str, Any], *,
                on_start: Callable[[KafkaBroker], None] | None = None) -> Iterator[Endpoint]:
    """Start a fresh ``side`` coordinator under ``work`` with the group ``settings``; stop it on exit.

    ``kafka``: a dev broker (its group coordinator is Kafka's); ``on_start`` may create topics on it.
    ``groupcoord``: ``groupcoord serve --no-spark`` on a fresh state root.
    """
    work.mkdir(parents=True, exist_ok=True)
    if side == KAFKA:
        with KafkaBroker.start(work / "kafka", properties=dict(settings), jvm_options=PEER_JVM_OPTIONS) as broker:
            if on_start is not None:
                on_start(broker)
            endpoint = Endpoint(side, broker.host, broker.port, broker.process.pid)
            asyncio.run(wait_for_group_coordinator(endpoint))
            yield endpoint
        return
    if side != GROUPCOORD:
        raise ValueError(f"unknown side {side!r}; known: {', '.join(SIDES)}")
    conf = [arg for key, value in settings.items() for arg in ("--conf", f"{key}={value}")]
    serve = ServeProcess(work / "root", *conf, log_path=work / "serve.log")
    try:
        address = serve.wait_ready(timeout=READY_TIMEOUT_S)
        if address is None:
            raise RuntimeError(f"groupcoord serve did not become ready:\n{serve.log_tail()}")
        endpoint = Endpoint(side, *address, serve.proc.pid)
        asyncio.run(wait_for_group_coordinator(endpoint))
        yield endpoint
    finally:
        serve.close()


@contextlib.contextmanager
def coordinator_with_topic(side: str, work: Path, settings: Mapping[str, Any], topic: str,
                           partitions: int) -> Iterator[Endpoint]:
    """:func:`coordinator`, with ``topic`` of ``partitions`` partitions created on it: through the broker's admin
    API on Kafka, in the state root's topic catalog on groupcoord (serve refuses commits, produces and fetches of
    partitions its catalog lacks, as Kafka does)."""

    def create_on_broker(broker: KafkaBroker) -> None:
        broker.create_topic(topic, partitions=partitions)

    with coordinator(side, work, settings, on_start=create_on_broker) as endpoint:
        if side == GROUPCOORD:
            TopicCatalog(StateRoot.open(work / "root")).create(topic, partitions)
        yield endpoint


RATIO_MEANING = ("the peer / groupcoord for times, groupcoord / the peer for rates (`*_per_s`), so above 1 "
                 "groupcoord is faster, below 1 slower")


async def wait_for_group_coordinator(endpoint: Endpoint, timeout_s: float = READY_TIMEOUT_S) -> None:
    """Return once FindCoordinator and DescribeGroups answer for :data:`PROBE_GROUPS` groups without a
    :data:`NOT_READY` error (an unknown group may be described with GROUP_ID_NOT_FOUND or as Dead).

    A new broker answers NOT_COORDINATOR until its first FindCoordinator has created ``__consumer_offsets`` and the
    partitions are loaded; without this wait the broker's first measurements would time that creation.
    """
    groups = [f"probe-{i}" for i in range(PROBE_GROUPS)]
    deadline = time.monotonic() + timeout_s
    connection = await Connection.open(endpoint.host, endpoint.port)
    try:
        while True:
            found = [await connection.request(FindCoordinatorRequest(version=2, key=g, key_type=0)) for g in groups]
            described = await connection.request(DescribeGroupsRequest(version=3, groups=groups,
                                                                       include_authorized_operations=False))
            errors = [r.error_code for r in found if r.error_code in NOT_READY] + [
                g.error_code for g in described.groups if g.error_code in NOT_READY]
            if not errors:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{endpoint.side}: group coordinator not ready after {timeout_s:.0f} s "
                                   f"(errors {sorted(set(errors))})")
            await asyncio.sleep(0.2)
    finally:
        await connection.close()


def ratio(figure: str, peer: float | None, ours: float | None) -> float | None:
    """The ratio of :data:`RATIO_MEANING` for ``figure``, or None when a side is missing or a divisor is 0."""
    if peer is None or ours is None:
        return None
    numerator, divisor = (ours, peer) if figure.endswith("_per_s") else (peer, ours)
    return float(f"{numerator / divisor:.3g}") if divisor else None  # 3 significant digits: ratios span 1e-4..1e2


def load_average() -> float:
    """The 1-minute load average, recorded with each row: this machine is shared."""
    return round(os.getloadavg()[0], 1)


def alternated(runs: int = REPETITIONS, sides: tuple[str, ...] = SIDES) -> list[tuple[int, str]]:
    """``(run, side)`` in the order to measure them: both sides each run, the order swapped every run (the peer
    first, then groupcoord first, ...), so neither side always meets a warmer or a colder machine."""
    return [(run, side) for run in range(runs) for side in (sides if run % 2 == 0 else sides[::-1])]


def medians(rows: list[dict[str, Any]], key: tuple[str, ...], figures: tuple[str, ...],
            totals: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """One row per side and ``key`` out of several runs' rows: each of ``figures`` as its median over the runs,
    with ``<figure>_spread`` (``"min-max"``) beside it and ``repetitions`` (how many runs); each of ``totals``
    (counts: errors, requests) summed over the runs; other columns as in the first run's row. A figure missing
    (``None``) in any run stays ``None``."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["side"], *(row[k] for k in key)), []).append(row)
    merged = []
    for runs in groups.values():
        row = {**runs[0], "repetitions": len(runs), **{t: sum(r[t] for r in runs) for t in totals}}
        for figure in figures:
            values = [r.get(figure) for r in runs]
            known = [v for v in values if v is not None]
            complete = len(known) == len(values)
            row[figure] = _rounded(statistics.median(known)) if complete else None
            row[f"{figure}_spread"] = f"{_rounded(min(known))}-{_rounded(max(known))}" if complete else None
        merged.append(row)
    return merged


def _rounded(value: float) -> float:
    return float(f"{value:.4g}")


def side_by_side(rows: list[dict[str, Any]], key: tuple[str, ...], figures: tuple[str, ...],
                 extras: tuple[str, ...] = (), sides: tuple[str, str] = (KAFKA, GROUPCOORD)) -> list[dict[str, Any]]:
    """One row per ``key`` with each figure on both ``sides`` (the peer, then groupcoord) and ``figure_ratio`` (see
    :data:`RATIO_MEANING`), then each of ``extras`` on both sides (no ratio).

    ``rows`` hold a ``side`` column; rows of one side lacking a key's counterpart get a ratio of None.
    """
    peer_side, our_side = sides
    by_key: dict[tuple[Any, ...], dict[str, dict[str, Any]]] = {}
    for row in rows:
        by_key.setdefault(tuple(row[k] for k in key), {})[row["side"]] = row
    table = []
    for values, by_side in by_key.items():
        merged: dict[str, Any] = dict(zip(key, values, strict=True))
        for figure in figures:
            peer, ours = by_side.get(peer_side, {}).get(figure), by_side.get(our_side, {}).get(figure)
            merged[f"{peer_side}_{figure}"], merged[f"{our_side}_{figure}"] = peer, ours
            merged[f"{figure}_ratio"] = ratio(figure, peer, ours)
        for extra in extras:
            for side in sides:
                merged[f"{side}_{extra}"] = by_side.get(side, {}).get(extra)
        table.append(merged)
    return table
