"""Server-side assignment: every pending ``server-<assignor>`` group of one moment, on the driver or in one Spark job.

The host hands :class:`SparkAssignmentRunner` a list of ``NeedsAssignment`` effects. Groups are bucketed by
assignor name. A bucket of at most :data:`DRIVER_PARTITIONS` assignable partitions runs on the driver, in Python
(:mod:`groupcoord.assignors.algorithms`: the same rows as the Spark plan, proven by ``tests/assignors/
test_engines_agree.py``), with no Spark at all; a larger bucket, and every ``weighted`` one, becomes one DataFrame
call in the assignors' ``group_id`` batch mode, whose output comes back through Arrow. Either way the rows are
encoded as ConsumerProtocol Assignments per member.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from groupcoord.coordinator.effects import CompleteAssignment, NeedsAssignment, newest_per_group
from groupcoord.protocol.consumer_protocol import Assignment, TopicPartitions, encode_assignment
from groupcoord.protocol.errors import Errors
from groupcoord.spark import session as spark_session
from groupcoord.spark.weights import PartitionKey, read_partition_weights, weight_of
from groupcoord.state_root import StateRoot
from groupcoord.topics import TopicCatalog

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from groupcoord.assignors.algorithms import Group
    from groupcoord.assignors.subscriptions import SubscriptionsMode

log = logging.getLogger("groupcoord.spark.assignment")

SERVER_PREFIX = "server-"

DRIVER_PARTITIONS = 200_000
"""A bucket of at most this many assignable partitions (over its groups) is assigned on the driver in Python, not
by a Spark job. Measured by ``bench/assign_engines.py`` (docs/benchmarks.md): the driver beat a warm Spark call at
every size it ran, up to this one (200k x 2,000 cooperative-sticky: 1.6 s fresh and 2.6 s for a rebalance, against
3.8 s and 9.4 s), so the threshold is the largest size measured rather than a crossover; a cold Spark call costs
seconds more."""

_WARMED_CONTEXTS: set[str] = set()
"""Application ids of the SparkContexts whose planner was warmed (see :meth:`SparkAssignmentRunner.warm_up`)."""

MEMBER_SCHEMA = pa.schema([("group_id", pa.string()), ("member_id", pa.string()), ("group_instance_id", pa.string()),
                           ("topics", pa.list_(pa.string())), ("rack", pa.string())])
PARTITION_SCHEMA = pa.schema([("group_id", pa.string()), ("topic", pa.string()), ("partition", pa.int32()),
                              ("racks", pa.list_(pa.string())), ("weight", pa.float64())])
OWNED_SCHEMA = pa.schema([("group_id", pa.string()), ("member_id", pa.string()), ("topic", pa.string()),
                          ("partition", pa.int32()), ("generation", pa.int32())])


def local_session() -> SparkSession:
    """The active SparkSession, or a new small local one (``serve`` outside a Spark driver); logs the cost."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    started = time.perf_counter()
    session = spark_session.local_session(master="local[2]", app_name="groupcoord-serve-assignor")
    log.info("started a local SparkSession for server-side assignment in %.1f s", time.perf_counter() - started)
    return session


def spark_assignment_runner(root: StateRoot, *, spark: SparkSession | None = None,
                            warm_up: bool = False) -> SparkAssignmentRunner:
    """The batched Spark assignment runner over ``root``'s topic catalog and partition weights, on ``spark`` (or the
    active or a new local SparkSession, started at the first call). Hosts take it as their ``assignment_runner``.

    ``warm_up`` starts warming the planner at once on a background thread (``spark.groupcoord.assignor.warmup``);
    without it, building the runner loads no Spark.
    """
    catalog = TopicCatalog(root)
    session_factory: Callable[[], SparkSession] = local_session if spark is None else (lambda: spark)
    runner = SparkAssignmentRunner(catalog.partition_counts, session=session_factory,
                                   weights_path=root.partition_weights_path)
    if warm_up:
        runner.start_warm_up()
    return runner


class SparkAssignmentRunner:
    """Computes server-side assignments with the DataFrame assignors.

    ``partition_counts`` returns the current topic catalog (topic -> partitions); ``racks`` optionally returns
    each topic's per-partition racks; ``weights_path`` is the checkpoint job's ``partition_weights`` table, read
    once per call (:mod:`groupcoord.spark.weights`; unmeasured partitions weigh 1.0). ``driver_partitions``: buckets
    up to this size run on the driver (see :data:`DRIVER_PARTITIONS`; 0 sends every bucket to Spark). The
    SparkSession is obtained lazily, on the first bucket that needs it.
    """

    def __init__(
        self,
        partition_counts: Callable[[], Mapping[str, int]],
        *,
        session: Callable[[], SparkSession] = local_session,
        racks: Callable[[str], Sequence[Sequence[str]] | None] | None = None,
        weights_path: Path | None = None,
        driver_partitions: int = DRIVER_PARTITIONS,
    ) -> None:
        self._partition_counts = partition_counts
        self._driver_partitions = driver_partitions
        self._session_factory = session
        self._session: SparkSession | None = None
        self._racks = racks
        self._weights_path = weights_path
        self._lock = threading.Lock()  # one assignment at a time: a real call, or a warm-up call
        self._busy = 0  # real calls waiting for the lock or running: the warm-up waits for them
        self._warm_up_stopped = threading.Event()

    def start_warm_up(self) -> threading.Thread:
        """Warm Spark's planner on a daemon thread (:mod:`groupcoord.spark.warmup`); returns the thread."""
        thread = threading.Thread(target=self.warm_up, name="assignor-warm-up", daemon=True)
        thread.start()
        return thread

    def stop_warm_up(self) -> None:
        """Make a warm-up under way stop after its current call."""
        self._warm_up_stopped.set()

    def warm_up(self, *, again: bool = False) -> int:
        """Blocking form of :meth:`start_warm_up`: returns the number of warm-up assignments made.

        The JVM stays warm for the life of its SparkContext, so a context that was warmed once (by any runner of
        this process) is not warmed again unless ``again``.
        """
        from groupcoord.spark.warmup import WARMUP_PARTITIONS, WARMUP_TOPIC, warm_up

        with self._lock:
            session = self._ensure_session()
        context = session.sparkContext.applicationId
        if context in _WARMED_CONTEXTS and not again:
            return 0
        _WARMED_CONTEXTS.add(context)

        def assign_one(effect: NeedsAssignment) -> None:
            with self._lock:
                self._assign_bucket(session, effect.assignor, [effect], {WARMUP_TOPIC: WARMUP_PARTITIONS}, {})

        return warm_up(assign_one, busy=lambda: self._busy > 0, stopped=self._warm_up_stopped.is_set)

    def _ensure_session(self) -> SparkSession:
        if self._session is None:
            self._session = self._session_factory()
        return self._session

    async def __call__(self, batch: Sequence[NeedsAssignment]) -> list[CompleteAssignment]:
        """Assign every group of ``batch``; runs the Spark work off the event loop."""
        return await asyncio.to_thread(self.assign, batch)

    def assign(self, batch: Sequence[NeedsAssignment]) -> list[CompleteAssignment]:
        """Blocking form of :meth:`__call__`: per assignor name used in ``batch``, the driver's Python engine or one
        Spark job (only the newest generation of each group is assigned; older ones could not complete anyway)."""
        from groupcoord.assignors import ASSIGNOR_NAMES

        answers: list[CompleteAssignment] = []
        buckets: dict[str, list[NeedsAssignment]] = defaultdict(list)
        for effect in newest_per_group(batch):
            if effect.assignor in ASSIGNOR_NAMES:
                buckets[effect.assignor].append(effect)
            else:
                log.warning("group %s asks for unknown server-side assignor %r", effect.group_id, effect.assignor)
                answers.append(_error(effect))
        counts = dict(self._partition_counts()) if buckets else {}
        for name in [n for n, effects in buckets.items() if self._on_driver(n, effects, counts)]:
            started = time.perf_counter()
            answers.extend(self._assign_on_driver(name, buckets.pop(name), counts))
            log.info("assigned group(s) with server-%s on the driver in %.3f s", name, time.perf_counter() - started)
        if not buckets:
            return answers
        self._busy += 1
        try:
            with self._lock:
                answers.extend(self._assign_buckets(buckets, batch))
        finally:
            self._busy -= 1
        return answers

    def _on_driver(self, name: str, effects: Sequence[NeedsAssignment], counts: Mapping[str, int]) -> bool:
        """Whether bucket ``name`` is small enough for the driver and its assignor has a Python engine."""
        from groupcoord.assignors.algorithms import PYTHON_ASSIGNORS

        if name not in PYTHON_ASSIGNORS:
            return False
        size = 0
        for effect in effects:
            topics = {t for member in effect.members for t in member.topics or ()}
            size += sum(counts.get(t, 0) for t in topics)
        return size <= self._driver_partitions

    def _assign_on_driver(self, name: str, effects: Sequence[NeedsAssignment],
                          counts: Mapping[str, int]) -> list[CompleteAssignment]:
        """The Python engine: each group on its own, no Spark (bad input values raise ``AssignorInputError``, as on
        the Spark path)."""
        from groupcoord.assignors.algorithms import assign

        rows = []
        for effect in effects:
            placed = assign(self._group(effect, counts), name)
            rows += [{"group_id": effect.group_id, "member_id": member, "topic": topic, "partition": partition}
                     for (topic, partition), member in placed.items()]
        return _answers(effects, rows)

    def _group(self, effect: NeedsAssignment, counts: Mapping[str, int]) -> Group:
        """``effect``'s group as the Python engine's input (the same rows :meth:`_inputs` gives Spark)."""
        from groupcoord.assignors.algorithms import Claim, Group, Member, Partition

        members: list[Member] = []
        claims: list[Claim] = []
        wanted: set[str] = set()
        for member in effect.members:
            topics = tuple(member.topics or ())
            wanted.update(topics)
            members.append(Member(member.member_id, topics, member.group_instance_id))
            claims.extend(Claim(member.member_id, tp.topic, p, effect.generation_id - 1)
                          for tp in member.owned for p in tp.partitions)
        partitions: list[Partition] = []
        for topic in sorted(wanted):
            racks = self._racks(topic) if self._racks else None
            partitions.extend(Partition(topic, p, tuple(racks[p]) if racks else ())
                              for p in range(counts.get(topic, 0)))
        return Group(tuple(members), tuple(partitions), tuple(claims), effect.group_id)

    def _assign_buckets(self, buckets: Mapping[str, Sequence[NeedsAssignment]],
                        batch: Sequence[NeedsAssignment]) -> list[CompleteAssignment]:
        session = self._ensure_session()
        answers: list[CompleteAssignment] = []
        counts = dict(self._partition_counts())
        weights = read_partition_weights(self._weights_path, {e.group_id for e in batch}) if self._weights_path else {}
        for name, effects in buckets.items():
            started = time.perf_counter()
            answers.extend(self._assign_bucket(session, name, effects, counts, weights))
            log.info("assigned %d group(s) with server-%s in %.3f s", len(effects), name,
                     time.perf_counter() - started)
        return answers

    def _assign_bucket(
        self, spark: SparkSession, name: str, effects: Sequence[NeedsAssignment], counts: Mapping[str, int],
        weights: Mapping[PartitionKey, float],
    ) -> list[CompleteAssignment]:
        from groupcoord.assignors import get_assignor
        from groupcoord.assignors.collect import to_arrow  # bad input values surface as one-line AssignorInputError
        from groupcoord.assignors.subscriptions import GloballyBalancedAssignor

        members, partitions, owned = self._inputs(spark, effects, counts, weights)
        assignor = get_assignor(name)
        if isinstance(assignor, GloballyBalancedAssignor):
            # The topic sets were compared here, so "homogeneous" is proven (see GloballyBalancedAssignor). The
            # bucket is past the driver engine's size already: no second driver attempt inside the call.
            assignor = dataclasses.replace(assignor, subscriptions=_subscriptions(effects), _proven=True,
                                           driver_rows=0)
        return _answers(effects, to_arrow(assignor.assign(members, partitions, owned)).to_pylist())

    def _inputs(
        self, spark: SparkSession, effects: Sequence[NeedsAssignment], counts: Mapping[str, int],
        weights: Mapping[PartitionKey, float],
    ) -> tuple[DataFrame, DataFrame, DataFrame]:
        member_rows: list[tuple[Any, ...]] = []
        owned_rows: list[tuple[Any, ...]] = []
        partition_rows: list[tuple[Any, ...]] = []
        for effect in effects:
            wanted: set[str] = set()
            for member in effect.members:
                topics = list(member.topics or ())
                wanted.update(topics)
                member_rows.append((effect.group_id, member.member_id, member.group_instance_id, topics, None))
                owned_rows.extend(
                    (effect.group_id, member.member_id, tp.topic, p, effect.generation_id - 1)
                    for tp in member.owned
                    for p in tp.partitions
                )
            for topic in sorted(wanted):
                racks = self._racks(topic) if self._racks else None
                partition_rows.extend(
                    (effect.group_id, topic, p, list(racks[p]) if racks else None,
                     weight_of(weights, effect.group_id, topic, p))
                    for p in range(counts.get(topic, 0))
                )
        return (
            local_frame(spark, member_rows, MEMBER_SCHEMA),
            local_frame(spark, partition_rows, PARTITION_SCHEMA),
            local_frame(spark, owned_rows, OWNED_SCHEMA),
        )


def local_frame(spark: SparkSession, rows: list[tuple[Any, ...]], schema: pa.Schema) -> DataFrame:
    """``rows`` as a driver-local frame, through Arrow.

    Arrow gives Spark a local relation that the optimiser knows the size of (a small assignment then runs as one
    task: :mod:`groupcoord.plans.partitioning`) and whose rows the assignor's checks read without a job. A
    list of tuples would become an RDD of unknown size, deserialised by Python workers when the job runs.
    """
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(schema)
    return spark.createDataFrame(pa.table([list(c) for c in columns], schema=schema))


def _subscriptions(effects: Sequence[NeedsAssignment]) -> SubscriptionsMode:
    """``"heterogeneous"`` when some group's members subscribe to different topic sets, else ``"homogeneous"``.

    The coordinator knows every member's subscription, so it tells the assignor instead of letting it check with a
    Spark job of its own (:mod:`groupcoord.assignors.subscriptions`).
    """
    for effect in effects:
        if len({frozenset(member.topics or ()) for member in effect.members}) > 1:
            return "heterogeneous"
    return "homogeneous"


def _answers(effects: Sequence[NeedsAssignment], rows: Sequence[Mapping[str, Any]]) -> list[CompleteAssignment]:
    """Output rows (``group_id, member_id, topic, partition``) as each group's encoded Assignments per member."""
    by_member: dict[tuple[str, str], dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        by_member[(row["group_id"], row["member_id"])][row["topic"]].append(row["partition"])
    answers = []
    for effect in effects:
        assignments = {}
        for member in effect.members:
            topics = by_member.get((effect.group_id, member.member_id), {})
            assignment = Assignment(
                partitions=tuple(TopicPartitions(t, tuple(sorted(ps))) for t, ps in sorted(topics.items()))
            )
            assignments[member.member_id] = encode_assignment(assignment)
        answers.append(CompleteAssignment(group_id=effect.group_id, generation_id=effect.generation_id,
                                          assignments=assignments))
    return answers


def _error(effect: NeedsAssignment) -> CompleteAssignment:
    return CompleteAssignment(group_id=effect.group_id, generation_id=effect.generation_id,
                              error=Errors.INCONSISTENT_GROUP_PROTOCOL)
