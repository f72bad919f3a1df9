"""Server-side assignment: every pending ``server-<assignor>`` group of one moment, on the driver or in one Spark job.

The host hands :class:`SparkAssignmentRunner` a list of ``NeedsAssignment`` effects. Groups are bucketed by
assignor name, and each bucket's groups are built once, as the assignors' input values
(:class:`~groupcoord.assignors.algorithms.Group`). The assignors pick the bucket's engine from its facts
(:func:`groupcoord.assignors.engine.choose_engine`: how many partitions, whether the members subscribe alike): the
Python algorithm right here, with no Spark at all, or one Spark call in the assignors' ``group_id`` batch mode, whose
output comes back through Arrow. Either way the rows are encoded as ConsumerProtocol Assignments per member.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from groupcoord.assignment.weights import PartitionKey, read_partition_weights, weight_of
from groupcoord.assignors.engine import DRIVER_PARTITIONS
from groupcoord.coordinator.effects import CompleteAssignment, NeedsAssignment, newest_per_group
from groupcoord.protocol.consumer_protocol import Assignment, TopicPartitions, encode_assignment
from groupcoord.protocol.errors import Errors
from groupcoord.state_root import StateRoot
from groupcoord.topics import TopicCatalog

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from groupcoord.assignors.algorithms import Group
    from groupcoord.assignors.engine import Engine, Row

log = logging.getLogger("groupcoord.assignment.runner")

_WARMED_CONTEXTS: set[str] = set()
"""Application ids of the SparkContexts whose planner was warmed (see :meth:`SparkAssignmentRunner.warm_up`)."""


def spark_assignment_runner(root: StateRoot, *, spark: SparkSession | Callable[[], SparkSession],
                            warm_up: bool = False) -> SparkAssignmentRunner:
    """The batched Spark assignment runner over ``root``'s topic catalog and partition weights, on ``spark`` (a
    session, or a function that returns one, called at the first assignment that needs Spark:
    :func:`groupcoord.spark.session.active_or_local_session` for ``serve``). Hosts take it as their
    ``assignment_runner``.

    ``warm_up`` starts warming the planner at once on a background thread (``spark.groupcoord.assignor.warmup``);
    without it, building the runner loads no Spark.
    """
    catalog = TopicCatalog(root)
    session: Callable[[], SparkSession] = spark if callable(spark) else (lambda: spark)
    runner = SparkAssignmentRunner(catalog.partition_counts, session=session, weights_path=root.partition_weights_path)
    if warm_up:
        runner.start_warm_up()
    return runner


class SparkAssignmentRunner:
    """Computes server-side assignments with the assignors.

    ``partition_counts`` returns the current topic catalog (topic -> partitions); ``racks`` optionally returns
    each topic's per-partition racks; ``weights_path`` is the checkpoint job's ``partition_weights`` table, read
    once per call that has a bucket whose assignor weighs partitions (:mod:`groupcoord.assignment.weights`; unmeasured
    partitions weigh 1.0). ``driver_partitions`` is the assignors' threshold for the Python engine on the driver
    (:data:`~groupcoord.assignors.engine.DRIVER_PARTITIONS`; 0 sends every bucket to Spark). The SparkSession is
    obtained lazily, on the first bucket that needs it.
    """

    def __init__(
        self,
        partition_counts: Callable[[], Mapping[str, int]],
        *,
        session: Callable[[], SparkSession],
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
        """Warm Spark's planner on a daemon thread (:mod:`groupcoord.assignment.warmup`); returns the thread."""
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
        from groupcoord.assignment.warmup import WARMUP_PARTITIONS, WARMUP_TOPIC, warm_up
        from groupcoord.assignors.engine import assign_groups, choose_engine, group_facts

        with self._lock:
            session = self._ensure_session()
        context = session.sparkContext.applicationId
        if context in _WARMED_CONTEXTS and not again:
            return 0
        _WARMED_CONTEXTS.add(context)

        def assign_one(effect: NeedsAssignment) -> None:
            groups = [self._group(effect, {WARMUP_TOPIC: WARMUP_PARTITIONS}, {})]
            engine = choose_engine(group_facts(effect.assignor, groups), driver_partitions=0)  # Spark's plans
            with self._lock:
                assign_groups(effect.assignor, groups, engine, session=session)

        return warm_up(assign_one, busy=lambda: self._busy > 0, stopped=self._warm_up_stopped.is_set)

    def _ensure_session(self) -> SparkSession:
        if self._session is None:
            self._session = self._session_factory()
        return self._session

    async def __call__(self, batch: Sequence[NeedsAssignment]) -> list[CompleteAssignment]:
        """Assign every group of ``batch``; runs the Spark work off the event loop."""
        return await asyncio.to_thread(self.assign, batch)

    def assign(self, batch: Sequence[NeedsAssignment]) -> list[CompleteAssignment]:
        """Blocking form of :meth:`__call__`: per assignor name used in ``batch``, the engine the assignors pick
        (only the newest generation of each group is assigned; older ones could not complete anyway)."""
        from groupcoord.assignors import ASSIGNOR_NAMES, WEIGHING_ASSIGNORS
        from groupcoord.assignors.engine import assign_groups, choose_engine, group_facts

        answers: list[CompleteAssignment] = []
        buckets: dict[str, list[NeedsAssignment]] = defaultdict(list)
        for effect in newest_per_group(batch):
            if effect.assignor in ASSIGNOR_NAMES:
                buckets[effect.assignor].append(effect)
            else:
                log.warning("group %s asks for unknown server-side assignor %r", effect.group_id, effect.assignor)
                answers.append(_error(effect))
        if not buckets:
            return answers
        counts = dict(self._partition_counts())
        weighed = [e.group_id for name, effects in buckets.items() if name in WEIGHING_ASSIGNORS for e in effects]
        weights = read_partition_weights(self._weights_path, set(weighed)) if self._weights_path and weighed else {}
        on_spark: list[tuple[str, list[NeedsAssignment], list[Group], Engine]] = []
        for name, effects in buckets.items():
            groups = [self._group(effect, counts, weights) for effect in effects]
            engine = choose_engine(group_facts(name, groups), driver_partitions=self._driver_partitions)
            if engine != "python":
                on_spark.append((name, effects, groups, engine))
                continue
            started = time.perf_counter()
            answers.extend(_answers(effects, assign_groups(name, groups, engine)))
            log.info("assigned group(s) with server-%s on the driver in %.3f s", name, time.perf_counter() - started)
        if not on_spark:
            return answers
        self._busy += 1
        try:
            with self._lock:
                session = self._ensure_session()
                for name, effects, groups, engine in on_spark:
                    started = time.perf_counter()
                    answers.extend(_answers(effects, assign_groups(name, groups, engine, session=session)))
                    log.info("assigned %d group(s) with server-%s in %.3f s", len(effects), name,
                             time.perf_counter() - started)
        finally:
            self._busy -= 1
        return answers

    def _group(self, effect: NeedsAssignment, counts: Mapping[str, int],
               weights: Mapping[PartitionKey, float]) -> Group:
        """``effect``'s group as the assignors' input: its members, every partition of the topics they want (with
        their racks and weights), and what each member owns, claimed in the generation before this one."""
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
            partitions.extend(Partition(topic, p, tuple(racks[p]) if racks else (),
                                        weight_of(weights, effect.group_id, topic, p))
                              for p in range(counts.get(topic, 0)))
        return Group(tuple(members), tuple(partitions), tuple(claims), effect.group_id)


def _answers(effects: Sequence[NeedsAssignment], rows: Sequence[Row]) -> list[CompleteAssignment]:
    """Output rows (``group_id, member_id, topic, partition``) as each group's encoded Assignments per member."""
    by_member: dict[tuple[str, str], dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for group_id, member_id, topic, partition in rows:
        by_member[(group_id, member_id)][topic].append(partition)
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
