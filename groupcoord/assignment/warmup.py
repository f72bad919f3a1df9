"""Warming Spark's planner for server-side assignment, off the request path.

A fresh driver (``serve``, or a job's driver running ``run_members``) plans its first Spark assignments with a cold
JVM: Catalyst's rules, whole-stage code generation and the JIT make a small group's first call take seconds, not the
fraction of a second of a warm one. Most groups never meet it: buckets up to ``DRIVER_PARTITIONS`` run on the
driver's Python engine (:mod:`groupcoord.assignment.runner`). What still runs on Spark is ``weighted`` (always) and
larger buckets of the others, so the warm-up runs those plans: ``weighted``, and ``cooperative-sticky`` for the
shared planner, on a synthetic small group (three members, one 12-partition topic) through the runner's Spark path:
a fresh group, then a rebalance where one member left and another joined (owned partitions take another plan). It
runs on a daemon thread when the runner is built and gives way to real work: between two calls it waits while a
Spark assignment is waiting or running, and a real Spark call waits at most for the warm-up call under way.

A coordinator in a job's driver (``run_members``, the registered source) knows the assignors its groups offer
(``spark.groupcoord.assignors``): :func:`plans_to_warm` keeps only those that would run a Spark plan for the
catalog's partitions, so a job whose assignments all run on the driver warms nothing: the warm-up's Spark jobs would
only take task slots and cores from the job's own first batches. ``serve`` warms both, for any client's choice.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from groupcoord.assignors.engine import Facts, choose_engine
from groupcoord.coordinator.effects import AssignmentMember, NeedsAssignment
from groupcoord.protocol.consumer_protocol import TopicPartitions

log = logging.getLogger("groupcoord.assignment.warmup")

WARMUP_TOPIC = "__groupcoord_warmup"
WARMUP_PARTITIONS = 12
WARMUP_ORDER: tuple[str, ...] = ("weighted", "cooperative-sticky")
"""The plans warmed: ``weighted`` always runs on Spark; ``cooperative-sticky`` (ServerSideAssignor's default) stands
for the others, which run on Spark only past ``DRIVER_PARTITIONS`` (the fewer calls, the sooner the cores are
left to a fresh driver's first rebalances)."""


SERVER_PREFIX = "server-"
"""The protocol name prefix of the assignors the coordinator runs (``server-cooperative-sticky``)."""


def plans_to_warm(offered: Sequence[str] | None, partitions: int) -> tuple[str, ...]:
    """The assignors to warm for a coordinator whose groups offer the protocols ``offered`` (``None``: unknown, any
    client's choice: :data:`WARMUP_ORDER`): the server-side ones that would assign a group of up to ``partitions``
    partitions with a Spark plan rather than on the driver."""
    if offered is None:
        return WARMUP_ORDER
    names = dict.fromkeys(p.removeprefix(SERVER_PREFIX) for p in offered if p.startswith(SERVER_PREFIX))
    return tuple(name for name in names
                 if choose_engine(Facts(assignor=name, held="driver", subscriptions="homogeneous",
                                        partitions=partitions)) != "python")


def _member(name: str, owned: Sequence[int]) -> AssignmentMember:
    partitions = (TopicPartitions(WARMUP_TOPIC, tuple(owned)),) if owned else ()
    return AssignmentMember(member_id=name, group_instance_id=None, topics=(WARMUP_TOPIC,), owned=partitions,
                            metadata=b"")


def synthetic_groups(assignor: str) -> list[NeedsAssignment]:
    """A fresh group of three, then the same group one rebalance later (``m0`` left, ``m3`` joined)."""
    group = f"{WARMUP_TOPIC}-{assignor}"
    deal = {name: list(range(i, WARMUP_PARTITIONS, 3)) for i, name in enumerate(("m0", "m1", "m2"))}
    fresh = tuple(_member(name, ()) for name in deal)
    rebalance = (_member("m1", deal["m1"]), _member("m2", deal["m2"]), _member("m3", ()))
    return [NeedsAssignment(group_id=group, generation_id=generation, protocol_name=f"server-{assignor}",
                            assignor=assignor, members=members)
            for generation, members in ((1, fresh), (2, rebalance))]


def warm_up(assign_one: Callable[[NeedsAssignment], None], *, busy: Callable[[], bool],
            stopped: Callable[[], bool] = lambda: False, assignors: Sequence[str] = WARMUP_ORDER,
            pause_s: float = 0.05) -> int:
    """Run ``assign_one`` on each assignor's synthetic groups, waiting while ``busy()``, until done or ``stopped()``;
    returns the calls made.

    A failure is logged and ends the warm-up: it only costs speed, the real calls report their own errors.
    """
    started, calls = time.perf_counter(), 0
    for assignor in assignors:
        for effect in synthetic_groups(assignor):
            while busy() and not stopped():
                time.sleep(pause_s)
            if stopped():
                log.info("planner warm-up stopped after %d call(s)", calls)
                return calls
            try:
                assign_one(effect)
            except Exception as exc:
                log.warning("planner warm-up stopped: %s", exc)
                return calls
            calls += 1
    log.info("warmed the planner with %d assignment(s) in %.1f s", calls, time.perf_counter() - started)
    return calls
